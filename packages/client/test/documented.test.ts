import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';

/**
 * Every TypeScript block of the package README and of docs/client.md, and every example program,
 * type-checked against the package's source under the strictest settings a user may have
 * (`strict`, `exactOptionalPropertyTypes`, `noUncheckedIndexedAccess`). A block that is a fragment
 * gets the names it uses from its page's prelude.
 */

const PKG = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(PKG, '../..');

const IMPORTS = `import { createQuestClient, type CreditState, type Event, type Payout, type RejectionCode, type Reversal, type ReversalRejectionCode } from '@quest/client';
declare const quest: ReturnType<typeof createQuestClient>;
declare const questId: string;
declare const saved: CreditState | undefined;
declare function save(state: CreditState): Promise<void>;
declare let lastSeen: string | undefined;
declare function handle(event: Event): Promise<void>;
let before = 0, credited = 0, failed = 0;
`;

/** The names each page's fragments use without declaring them. */
const PAGES: Record<string, string> = {
  'packages/client/README.md': `${IMPORTS}declare const rows: { address: string; points: number }[];\n`,
  'docs/client.md': `${IMPORTS}declare function rows(): AsyncGenerator<{ line: number; address: string; points: string }>;\n`,
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quest-client-documented-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function documentedFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const [page, prelude] of Object.entries(PAGES)) {
    const text = await readFile(join(ROOT, page), 'utf8');
    const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(blocks.length, page).toBeGreaterThan(0);
    for (const [n, body] of blocks.entries()) {
      const file = join(dir, `${page.replaceAll('/', '_')}.${n + 1}.ts`);
      // A whole program brings its own imports; a fragment gets the page's prelude.
      await writeFile(file, /^import /m.test(body) ? body : `${prelude}${body}\n`);
      files.push(file);
    }
  }
  const examples = join(PKG, 'examples');
  for (const name of await readdir(examples)) if (name.endsWith('.ts')) files.push(join(examples, name));
  return files;
}

it('the documented examples type-check under exactOptionalPropertyTypes', async () => {
  const program = ts.createProgram(await documentedFiles(), {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    moduleDetection: ts.ModuleDetectionKind.Force,
    allowImportingTsExtensions: true,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    typeRoots: [join(ROOT, 'node_modules/@types')],
    skipLibCheck: true,
    paths: { '@quest/client': [join(PKG, 'src/index.ts')] },
  });
  const errors = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  expect(errors).toEqual([]);
}, 60_000);
