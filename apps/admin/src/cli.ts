import { main } from './main.ts';

// A reader that stops early (`quest-admin … | head`) closes the pipe: stop quietly, as a shell tool would.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

// The only place the CLI touches the process: arguments, environment, streams, exit code.
process.exitCode = await main(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  interactive: Boolean(process.stderr.isTTY),
});
