import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Before the first integration file: bundle the API, worker and quest-admin with `npm run build`'s
 * script (under a second). Processes started by the tests then run the bundles, which are as
 * fresh as the sources (see serviceEntry in @quest/testing and apps/admin/bin/fresh.js); a file
 * edited during a run makes its bundle stale and its processes fall back to the TypeScript.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`scripts/build.mjs failed (${build.status}):\n${build.stdout}${build.stderr}`);
}
