import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * Inside the monorepo the package is its TypeScript source (`exports` point at src/). Plain Node 22
 * runs it by stripping the types, which works only for syntax that erases (no parameter
 * properties, enums, namespaces): a user's `node script.ts` imports it without a build or a loader.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

it('plain Node imports the source and credits through it', async () => {
  const script = `
    import { createQuestClient, CreditBatchError } from '@quest/client';
    const fetch = async () => new Response(JSON.stringify({ payout: { id: 'pay_1', amount: 5, created_at: 'x', account: { pass: '0x' } } }),
      { status: 200, headers: { 'content-type': 'application/json' } });
    const outcome = await createQuestClient({ baseUrl: 'http://api.test', fetch }).allocate({ questId: 1, address: '0x', points: 5 });
    console.log(JSON.stringify({ kind: outcome.kind, id: outcome.payout.id, error: typeof CreditBatchError }));
  `;
  // --experimental-strip-types is the default from Node 22.18 on; named so that earlier 22.x agree.
  const { stdout } = await run(
    process.execPath,
    ['--experimental-strip-types', '--no-warnings', '--input-type=module', '-e', script],
    {
      cwd: ROOT,
    },
  );
  expect(JSON.parse(stdout)).toEqual({ kind: 'payout', id: 'pay_1', error: 'function' });
});
