#!/usr/bin/env node
// Bundle the deployable processes (api, worker) and the operator CLI with esbuild: one ESM file each,
// except the CLI's, which is split (see below).
//
// Only this repository's TypeScript (@quest/* workspaces and the app itself) goes into the bundle;
// third-party packages stay external and load from node_modules as usual, because some of them
// read their own files at run time (e.g. @fastify/swagger-ui's static assets). Running the bundle
// with plain `node` instead of through tsx's run-time transpiler saves about 70 MB of RSS per
// process and most of the start-up time. Development runs the TypeScript directly; tests bundle once
// (tests/global-setup.ts) and start the bundles while they are as fresh as the sources.
import { build } from 'esbuild';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleConsoleScript } from '../apps/api/src/console/script.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Everything imported by bare name is external, except our own workspace packages. */
const thirdPartyExternal = {
  name: 'third-party-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@quest/') ? undefined : { path: args.path, external: true },
    );
  },
};

/**
 * Lua scripts live in .lua files beside the module that runs them, which reads each once at load:
 * `readFileSync(new URL('./name.lua', import.meta.url), 'utf8')`. A bundle is not beside them, so
 * each such read is replaced by the script's text. A .lua reference in another form fails the build.
 */
const LUA_READ = /readFileSync\(new URL\('(\.\/[\w./-]+\.lua)', import\.meta\.url\), 'utf8'\)/g;
const inlineLua = {
  name: 'inline-lua',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes('node_modules')) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('.lua')) return undefined;
      const reads = [...source.matchAll(LUA_READ)];
      const scripts = await Promise.all(reads.map((m) => readFile(join(dirname(args.path), m[1]), 'utf8')));
      let i = 0;
      const contents = source.replace(LUA_READ, () => JSON.stringify(scripts[i++]));
      if (/\.lua'/.test(contents)) throw new Error(`${args.path}: a .lua file read in another form than ${LUA_READ}`);
      return { contents, loader: 'ts' };
    });
  },
};

const targets = [
  // The console's browser script is bundled too, and its text put in the API's bundle (see
  // apps/api/src/console/assets.ts): Node runs the bundling module's TypeScript itself.
  { entry: 'apps/api/src/server.ts', out: 'apps/api/dist/server.mjs', consoleScript: true },
  { entry: 'apps/worker/src/main.ts', out: 'apps/worker/dist/main.mjs' },
  // The container healthcheck of a worker: plain node, no tsx, so it starts in a few milliseconds.
  { entry: 'apps/worker/src/healthcheck.ts', out: 'apps/worker/dist/healthcheck.mjs' },
  // quest-admin: bin/quest-admin.js runs this bundle while it is newer than the sources (else tsx).
  // Split at the CLI's dynamic imports (one per command): the entry holds only the command line,
  // and each command's code and packages (postgres.js, BullMQ, the API client) are in chunks
  // under dist/chunks/ that load when that command runs. A single file would load every package
  // at start: about 1.5 s of a `--version` here, paid by every call.
  { entry: 'apps/admin/src/cli.ts', out: 'apps/admin/dist/cli.mjs', split: true },
];

/** Where a split build's chunks go, beside its entry; and the list of the chunks of its last build. */
const CHUNKS = 'chunks';
const CHUNK_LIST = '.build.json';

/**
 * Remove the chunks of older builds. Those of the build just replaced stay: a process started from
 * its entry a moment ago may still import them. So a directory holds two builds' chunks at most.
 */
async function pruneChunks(outdir, current) {
  const dir = join(outdir, CHUNKS);
  let previous = [];
  try {
    previous = JSON.parse(await readFile(join(dir, CHUNK_LIST), 'utf8'));
  } catch {}
  const keep = new Set([...current, ...previous, CHUNK_LIST]);
  for (const name of await readdir(dir)) {
    if (!keep.has(name) && !name.endsWith('.tmp')) await rm(join(dir, name), { force: true });
  }
  await writeAtomically(join(dir, CHUNK_LIST), JSON.stringify(current));
}

async function writeAtomically(path, contents) {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, path);
}

const only = process.argv.slice(2);
await Promise.all(
  targets
    .filter((t) => only.length === 0 || only.some((o) => t.entry.includes(o)))
    .map(async (t) => {
      const outdir = dirname(t.out);
      const result = await build({
        absWorkingDir: root,
        entryPoints: [t.entry],
        ...(t.split
          ? {
              outdir,
              splitting: true,
              entryNames: basename(t.out, extname(t.out)),
              chunkNames: `${CHUNKS}/[name]-[hash]`,
              outExtension: { '.js': extname(t.out) },
            }
          : { outfile: t.out }),
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        sourcemap: true,
        logLevel: 'warning',
        plugins: [thirdPartyExternal, inlineLua],
        ...(t.consoleScript ? { define: { __CONSOLE_SCRIPT__: JSON.stringify(await bundleConsoleScript()) } } : {}),
        write: false,
      });
      // Each file appears whole (written aside, then renamed), the entry last, after the chunks it
      // imports: a quest-admin started meanwhile runs either the previous bundle or this one, never
      // a half-written file nor an entry whose chunks are not there yet.
      const entry = join(root, t.out);
      const isEntry = (file) => file.path === entry || file.path === `${entry}.map`;
      const files = [...result.outputFiles.filter((f) => !isEntry(f)), ...result.outputFiles.filter(isEntry)];
      for (const file of files) await writeAtomically(file.path, file.contents);
      if (t.split) {
        const chunks = join(root, outdir, CHUNKS);
        const current = files.filter((f) => dirname(f.path) === chunks).map((f) => relative(chunks, f.path));
        await mkdir(chunks, { recursive: true });
        await pruneChunks(join(root, outdir), current);
      }
    }),
);
