#!/usr/bin/env node
// Build @quest/client for use outside this monorepo: `node scripts/build.mjs [outDir]` (default
// dist/) writes ESM JavaScript and .d.ts compiled by tsc from src/ and generated/, this README, the
// repository's LICENSE, and a package.json whose `exports` point at the compiled files. Inside the
// monorepo the package is used from its TypeScript (package.json exports src/); `npm publish dist`
// (or `npm pack dist`) ships the build. test/package.test.ts builds it and uses it from a project
// outside the repository, in Node and in a browser bundle.
import { execFileSync } from 'node:child_process';
import { copyFile, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = fileURLToPath(new URL('..', import.meta.url));
const out = resolve(process.argv[2] ?? join(pkgDir, 'dist'));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

await rm(out, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(pkgDir, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit' });

// tsc rewrites `./x.ts` to `./x.js` in the JavaScript but keeps it in the declarations; TypeScript
// before 5.0 cannot follow a `.ts` specifier there, so the declarations get `.js` too.
for (const name of await readdir(out, { recursive: true })) {
  if (!name.endsWith('.d.ts')) continue;
  const path = join(out, name);
  const text = await readFile(path, 'utf8');
  await writeFile(path, text.replace(/(from\s+'\.{1,2}\/[^']+)\.ts'/g, "$1.js'"));
}

const source = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8'));
const entry = (file) => ({ types: `./${file}.d.ts`, default: `./${file}.js` });
const manifest = {
  name: source.name,
  version: source.version,
  description: source.description,
  license: source.license,
  type: 'module',
  sideEffects: false,
  engines: source.engines,
  exports: { '.': entry('src/index'), './schema': entry('generated/openapi'), './package.json': './package.json' },
  types: './src/index.d.ts',
  dependencies: source.dependencies,
};
await writeFile(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
await copyFile(join(pkgDir, 'README.md'), join(out, 'README.md'));
await copyFile(join(pkgDir, '../../LICENSE'), join(out, 'LICENSE'));
