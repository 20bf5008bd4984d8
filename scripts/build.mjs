#!/usr/bin/env node
// Bundle the deployable processes (api, worker) and the operator CLI into one ESM file each, with esbuild.
//
// Only this repository's TypeScript (@quest/* workspaces and the app itself) goes into the bundle;
// third-party packages stay external and load from node_modules as usual, because some of them
// read their own files at run time (e.g. @fastify/swagger-ui's static assets). Running the bundle
// with plain `node` instead of through tsx's run-time transpiler saves about 70 MB of RSS per
// process and most of the start-up time. Development runs the TypeScript directly; tests bundle once
// (tests/global-setup.ts) and start the bundles while they are as fresh as the sources.
import { build } from 'esbuild';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

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

const targets = [
  { entry: 'apps/api/src/server.ts', out: 'apps/api/dist/server.mjs' },
  { entry: 'apps/worker/src/main.ts', out: 'apps/worker/dist/main.mjs' },
  // The container healthcheck of a worker: plain node, no tsx, so it starts in a few milliseconds.
  { entry: 'apps/worker/src/healthcheck.ts', out: 'apps/worker/dist/healthcheck.mjs' },
  // quest-admin: bin/quest-admin.js runs this bundle while it is newer than the sources (else tsx).
  { entry: 'apps/admin/src/cli.ts', out: 'apps/admin/dist/cli.mjs' },
];

const only = process.argv.slice(2);
await Promise.all(
  targets
    .filter((t) => only.length === 0 || only.some((o) => t.entry.includes(o)))
    .map(async (t) => {
      const result = await build({
        absWorkingDir: root,
        entryPoints: [t.entry],
        outfile: t.out,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        sourcemap: true,
        logLevel: 'warning',
        plugins: [thirdPartyExternal],
        write: false,
      });
      // Each file appears whole (written aside, then renamed): a quest-admin started meanwhile
      // runs either the previous bundle or this one, never a half-written file.
      for (const file of result.outputFiles) {
        await mkdir(dirname(file.path), { recursive: true });
        const tmp = `${file.path}.${process.pid}.tmp`;
        await writeFile(tmp, file.contents);
        await rename(tmp, file.path);
      }
    }),
);
