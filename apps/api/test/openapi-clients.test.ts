import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@hey-api/openapi-ts';
import { ERROR_CODES } from '@quest/domain';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedOpenApiDocument } from './helpers.ts';

/**
 * Clients generated from the served document by two generators nobody here wrote get named types:
 * @hey-api/openapi-ts (a fetch client with an SDK) and openapi-typescript (types of every path,
 * response headers included; hey-api does not type response headers, so the Location of a 202 is
 * typed there, and through the named StatusUrl schema in hey-api's types). The output compiles
 * under `strict`, and a client-side snippet using the types compiles too — or fails where it should.
 * Offline: the input is a local file; nothing is fetched.
 */

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-clients-'));
  const doc = await servedOpenApiDocument();
  const input = join(dir, 'openapi.json');
  await writeFile(input, JSON.stringify(doc));
  await createClient({ input, output: { path: join(dir, 'hey') }, logs: { level: 'silent' } });
  await writeFile(join(dir, 'openapi-typescript.ts'), astToString(await openapiTS(doc as never)));
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Type-check files under `strict`; the diagnostics as text, one per line. */
function typecheck(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: [],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('generated clients', () => {
  it('hey-api: named Allocation, Batch and ErrorCode types, a StatusUrl type, and the operations', async () => {
    const types = await readFile(join(dir, 'hey', 'types.gen.ts'), 'utf8');
    for (const name of ['Allocation', 'AllocationResponse', 'Batch', 'BatchResponse', 'BatchResult', 'Payout', 'StatusUrl'])
      expect(types, name).toMatch(new RegExp(`^export type ${name} = `, 'm'));
    const union = types.match(/^export type ErrorCode = (.*);$/m)?.[1];
    expect(union?.split(' | ')).toEqual(ERROR_CODES.map((c) => `'${c}'`));
    // Result errors carry the code type, not a plain string.
    expect(types).toMatch(/export type OutcomeError = \{[^}]*code: ErrorCode;/s);
    const sdk = await readFile(join(dir, 'hey', 'sdk.gen.ts'), 'utf8');
    for (const op of ['allocateQuestPoints', 'getAllocation', 'createBatch', 'getBatch', 'getQuest', 'listPublicQuests'])
      expect(sdk).toContain(`export const ${op} = `);
  });

  it('openapi-typescript: the 202 answers type their Location header (required) and Idempotent-Replayed', async () => {
    const text = await readFile(join(dir, 'openapi-typescript.ts'), 'utf8');
    expect(text).toMatch(/Location: components\["schemas"\]\["StatusUrl"\];/);
    expect(text).toMatch(/"Idempotent-Replayed"\?: "true";/);
  });

  it('both compile under strict, and so does a client using the types (wrong uses do not)', async () => {
    const snippet = join(dir, 'client.ts');
    await writeFile(
      snippet,
      `import type { Allocation, Batch, ErrorCode, ErrorResponse, OutcomeError, StatusUrl } from './hey/types.gen';
import { allocateQuestPoints } from './hey/sdk.gen';
import type { paths } from './openapi-typescript';

type Allocated = paths['/quests/{questId}']['post']['responses'];
export const location: Allocated[202]['headers']['Location'] = '/quests/1/allocations/alc_01jf8q4g0x7m3r6v2k9d1n5bta';
export const url: StatusUrl = location;
export const replayed: Allocated[200]['headers']['Idempotent-Replayed'] = 'true';
export const code: ErrorCode = 'RATE_LIMITED';
export const outcome: OutcomeError = { code, message: 'Too many requests.' };
export const status: Allocation['status'] = 'pending';
export const progress: Batch['processed'] = 0;
export const envelope: ErrorResponse['code'] = outcome.code;
export async function credit(questId: number) {
  const { data } = await allocateQuestPoints({ path: { questId }, body: { points: 10, address: '0x52908400098527886E0F7030069857D2E4169EE7' } });
  return data && 'payout' in data ? data.payout.amount : data?.allocation.id;
}
`,
    );
    const wrong = join(dir, 'wrong.ts');
    await writeFile(
      wrong,
      `import type { ErrorCode, OutcomeError } from './hey/types.gen';
import type { paths } from './openapi-typescript';
export const location: paths['/quests/{questId}']['post']['responses'][202]['headers']['Location'] = 42;
export const code: ErrorCode = 'NOT_A_CODE';
export const outcome: OutcomeError['code'] = 'INSUFFICIENT_FUNDS';
`,
    );
    // One program for both (the generated client is checked once): every error is in wrong.ts, one per wrong line.
    const errors = typecheck([snippet, wrong]);
    expect(
      errors.map((e) => e.split(' ')[0]),
      errors.join('\n'),
    ).toEqual(['wrong.ts:3', 'wrong.ts:4', 'wrong.ts:5']);
  }, 60_000);
});
