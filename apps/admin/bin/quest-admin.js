#!/usr/bin/env node
// Launcher. `npm run build` (which `npm start` runs) bundles the CLI into dist/cli.mjs (and the
// chunks each command loads when it runs, in dist/chunks/): plain node answers `--version` from it
// in about 0.2 s and 65 MB, where the TypeScript through tsx's run-time transpiler takes about 0.9 s
// and 75 MB. The bundle is used only while no source file it was built from is newer, so an edited
// checkout never runs stale code: then tsx runs the TypeScript.
import { fileURLToPath } from 'node:url';
import { adminSourceDirs, bundleIsFresh } from './fresh.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const bundle = fileURLToPath(new URL('../dist/cli.mjs', import.meta.url));

if (bundleIsFresh(bundle, adminSourceDirs(root))) {
  await import(bundle);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
