import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from './infra.ts';

/**
 * `--runtime bundle`: measure the service as a compiled build instead of TypeScript run through
 * tsx. The repo's own code (apps/*, @quest/*) is bundled into one ESM file per app; third-party
 * packages stay external and resolve from the repo's node_modules (the output lives under the
 * repo root for that). The migrations directory is copied to where packages/db/src/migrate.ts
 * looks for it relative to the bundle (../migrations). Nothing in the source tree is written.
 */
export interface Bundle {
  api: string;
  worker: string;
}

export async function bundleServices(outDir: string): Promise<Bundle> {
  const bin = join(outDir, 'bin');
  mkdirSync(bin, { recursive: true });
  await build({
    entryPoints: { api: join(REPO_ROOT, 'apps/api/src/server.ts'), worker: join(REPO_ROOT, 'apps/worker/src/main.ts') },
    outdir: bin,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: false,
    logLevel: 'warning',
    plugins: [
      {
        name: 'external-third-party',
        setup(b) {
          // Bare specifiers that are not our workspace packages stay external.
          b.onResolve({ filter: /^[^./]/ }, (args) =>
            args.path.startsWith('@quest/') ? undefined : { path: args.path, external: true },
          );
        },
      },
    ],
  });
  cpSync(join(REPO_ROOT, 'packages/db/migrations'), join(outDir, 'migrations'), { recursive: true });
  return { api: join(bin, 'api.mjs'), worker: join(bin, 'worker.mjs') };
}
