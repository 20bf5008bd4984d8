import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * @quest/client as someone outside this repository gets it: built by scripts/build.mjs into a
 * project in a temporary directory, next to nothing but its own dependencies (linked from this
 * repository's node_modules, so no registry is needed), then imported by plain Node, type-checked
 * under NodeNext resolution, and bundled for a browser.
 */

const run = promisify(execFile);
const PKG = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(PKG, '../..');

let dir: string;
const modules = () => join(dir, 'node_modules');

/** Link `name` and, recursively, its dependencies from the repository's node_modules. */
async function linkWithDependencies(name: string, seen = new Set<string>()): Promise<void> {
  if (seen.has(name)) return;
  seen.add(name);
  const target = join(modules(), name);
  await mkdir(join(target, '..'), { recursive: true });
  await symlink(join(ROOT, 'node_modules', name), target, 'dir');
  const manifest = JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
  for (const dep of Object.keys(manifest.dependencies ?? {})) await linkWithDependencies(dep, seen);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quest-client-package-'));
  await run(process.execPath, [join(PKG, 'scripts/build.mjs'), join(modules(), '@quest/client')]);
  const manifest = JSON.parse(await readFile(join(modules(), '@quest/client/package.json'), 'utf8'));
  const seen = new Set<string>();
  for (const dep of Object.keys(manifest.dependencies)) await linkWithDependencies(dep, seen);
  // For the examples, which are Node programs.
  await linkWithDependencies('@types/node', seen);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'outside', private: true, type: 'module' }));
}, 120_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the built package', () => {
  it('declares ESM exports with types, Node ≥ 20.3, and depends on no package of the service', async () => {
    const manifest = JSON.parse(await readFile(join(modules(), '@quest/client/package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: '@quest/client',
      type: 'module',
      engines: { node: '>=20.3' },
      exports: { '.': { types: './src/index.d.ts', default: './src/index.js' } },
    });
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['openapi-fetch', 'standardwebhooks']);
    for (const file of ['src/index.js', 'src/index.d.ts', 'generated/openapi.d.ts', 'README.md', 'LICENSE'])
      expect((await stat(join(modules(), '@quest/client', file))).isFile(), file).toBe(true);
  });

  it('runs in plain Node, outside the repository', async () => {
    // A credit through a fetch of the script's own: the compiled openapi-fetch path end to end.
    const script = `
      import { createQuestClient, QuestError } from '@quest/client';
      const fetch = async (request) => new Response(JSON.stringify({ payout: { id: 'pay_1', amount: 5, created_at: 'x', account: { pass: '0x' } } }),
        { status: 200, headers: { 'content-type': 'application/json', 'x-seen-key': request.headers.get('idempotency-key') } });
      const outcome = await createQuestClient({ baseUrl: 'http://api.test', apiKey: 'sk_x', fetch }).allocate({ questId: 1, address: '0x', points: 5 });
      console.log(JSON.stringify({ kind: outcome.kind, key: outcome.idempotencyKey.length, error: typeof QuestError }));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({ kind: 'payout', key: 32, error: 'function' });
  });

  it('type-checks the examples under strict NodeNext resolution, and catches a wrong use', async () => {
    await cp(join(PKG, 'examples'), join(dir, 'examples'), { recursive: true, filter: (src) => !src.endsWith('tsconfig.json') });
    const wrong = join(dir, 'examples', 'wrong.ts');
    await writeFile(
      wrong,
      `import { createQuestClient } from '@quest/client';
const outcome = await createQuestClient({ baseUrl: 'x' }).allocate({ questId: 1, address: '0x', points: 1 });
if (outcome.kind === 'payout') console.log(outcome.code);
export const kind: 'payout' | 'rejection' | 'pending' = outcome.kind === 'nope' ? 'pending' : outcome.kind;
`,
    );
    const program = ts.createProgram(
      [...['allocate', 'credit-file', 'webhook-receiver'].map((n) => join(dir, 'examples', `${n}.ts`)), wrong],
      {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        types: ['node'],
        // The libraries' own declarations are theirs to check (standardwebhooks' name Buffer).
        skipLibCheck: true,
      },
    );
    const errors = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file
        ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
        : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(
      errors.map((e) => e.split(' ')[0]),
      errors.join('\n'),
    ).toEqual(['examples/wrong.ts:3', 'examples/wrong.ts:4']);
  }, 60_000);

  it('bundles for a browser: no Node built-in is imported', async () => {
    const result = await build({
      absWorkingDir: dir,
      stdin: { contents: "export * from '@quest/client';", resolveDir: dir, loader: 'js' },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    });
    expect(result.errors).toEqual([]);
    const code = result.outputFiles[0]!.text;
    expect(code).toContain('createQuestClient');
    expect(code).not.toMatch(/from\s*["']node:|require\(["'](node:)?(fs|http|crypto|stream|buffer)["']\)/);
  });
});
