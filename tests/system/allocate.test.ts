import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, vi } from 'vitest';
import { generateApiKey } from '@quest/domain';
import { auditViolations, createOwner, get, post, systemTest, type System, testAddress } from '@quest/testing';

const test = systemTest({ workers: 1, partitions: 4 });

/**
 * Bounds the service promises, with a margin for a loaded 2-core machine: a feature-flag change is
 * seen within 2 s, a key revocation within milliseconds (a PostgreSQL notification).
 */
const FLAG_CHANGE_SEEN_MS = 2000;
const LOADED_MACHINE_MARGIN_MS = 3000;

const allocate = (system: System, questId: number | string, body: unknown, headers: Record<string, string>) =>
  post(system, `/quests/${questId}`, body, headers);

function expectEnvelope(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({
    statusCode: status,
    code,
    error: expect.any(String),
    message: expect.any(String),
    requestId: expect.any(String),
  });
}

/**
 * POST a body with node:http the way an uploading client does: piece by piece until the server
 * answers (which it may do early), then the rest of the body after the answer. Resolves with the
 * answer and with the error, if any, that the rest of the upload met: a server that closes the
 * connection as it answers resets it; one that keeps reading takes it all.
 */
async function rawPost(
  baseUrl: string,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; headers: Record<string, unknown>; uploadError: Error | undefined }> {
  let uploadError: Error | undefined;
  const agent = new Agent({ keepAlive: true });
  const req = httpRequest(new URL(path, baseUrl), { method: 'POST', headers, agent });
  const failed = new Promise<never>((_, reject) => req.on('error', reject));
  const answered = new Promise<{ status: number; body: any; headers: Record<string, unknown> }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), headers: res.headers }));
    });
  });
  let done = false;
  void answered.then(() => (done = true));
  const piece = 64 * 1024;
  let at = 0;
  while (!done && at < body.length) {
    const ok = req.write(body.subarray(at, at + piece));
    at += piece;
    if (!ok) await Promise.race([new Promise((r) => req.once('drain', r)), answered, failed]);
  }
  const answer = await Promise.race([answered, failed]);
  await new Promise<void>((resolve) => {
    req.removeAllListeners('error');
    req.on('error', (err) => {
      uploadError = err;
      resolve();
    });
    req.end(body.subarray(Math.min(at, body.length)), () => resolve());
  });
  agent.destroy();
  return { ...answer, uploadError };
}

describe('POST /quests/:questId — success', () => {
  test('answers the payout field by field, credits the account and lowers the budget', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const q = await makeQuest({ totalPoints: 1000 });
    const before = Date.now();
    const res = await allocate(system, q, { points: 25, address: accounts[0]!.toLowerCase() }, { 'x-api-key': owner.apiKey });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body)).toEqual(['payout']);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    const { payout } = res.body;
    expect(Object.keys(payout).sort()).toEqual(['account', 'amount', 'created_at', 'id']);
    expect(payout.id).toMatch(/^pay_[0-9a-z]{26}$/);
    expect(payout.amount).toBe(25);
    expect(payout.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Decided now, by the database's clock (which may differ from this process's by a little).
    expect(Date.parse(payout.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(payout.account).toEqual({ pass: accounts[0] });
    const [quest] = await system.db.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${q}`;
    expect(quest!.points_remaining).toBe(975);
    const [acc] = await system.db.sql<{ balance: number }[]>`select balance from accounts where pass_address = ${accounts[0]!}`;
    expect(acc!.balance).toBe(25);
    const detail = await get(system, `/quests/${q}`, { 'x-api-key': owner.apiKey });
    expect(detail.status).toBe(200);
    expect(detail.body.points_remaining).toBe(975);
    expect(detail.body.payouts[0]).toEqual(payout);
  });

  test('answers addresses in EIP-55 checksum form whatever case they arrive in', async ({ system, owner, quest }) => {
    const checksummed = '0x52908400098527886E0F7030069857D2E4169EE7';
    await system.db.sql`insert into accounts (pass_address) values (${checksummed}) on conflict do nothing`;
    const upper = `0x${checksummed.slice(2).toUpperCase()}`;
    const res = await allocate(system, quest, { points: 1, address: upper }, { 'x-api-key': owner.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.payout.account.pass).toBe(checksummed);
  });
});

describe('POST /quests/:questId — decisions at decision time', () => {
  test('60 → 50 → 40 on a budget of 100 gives accept, reject, accept, every time', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const auth = { 'x-api-key': owner.apiKey };
    for (let round = 0; round < 5; round++) {
      const q = await makeQuest({ totalPoints: 100 });
      const a = await allocate(system, q, { points: 60, address: accounts[1]! }, auth);
      const b = await allocate(system, q, { points: 50, address: accounts[1]! }, auth);
      const c = await allocate(system, q, { points: 40, address: accounts[1]! }, auth);
      expect([a.status, b.status, c.status]).toEqual([200, 400, 200]);
      expectEnvelope(b, 400, 'INSUFFICIENT_POINTS');
    }
  });

  test('rejects outside the window, with the action type deactivated, and for unknown accounts', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const auth = { 'x-api-key': owner.apiKey };
    const HOUR = 3_600_000;
    const future = await makeQuest({ startAt: new Date(Date.now() + HOUR), endAt: new Date(Date.now() + 2 * HOUR) });
    const ended = await makeQuest({ startAt: new Date(Date.now() - 2 * HOUR), endAt: new Date(Date.now() - 1000) });
    const deactivated = await makeQuest({ actionStatus: 'deactivated' });
    const small = await makeQuest({ totalPoints: 1000 });
    expectEnvelope(await allocate(system, future, { points: 1, address: accounts[0]! }, auth), 400, 'QUEST_NOT_ACTIVE');
    expectEnvelope(await allocate(system, ended, { points: 1, address: accounts[0]! }, auth), 400, 'QUEST_NOT_ACTIVE');
    expectEnvelope(await allocate(system, deactivated, { points: 1, address: accounts[0]! }, auth), 400, 'ACTION_TYPE_INACTIVE');
    expectEnvelope(
      await allocate(system, small, { points: 1, address: testAddress(0xdead_beef) }, auth),
      400,
      'ACCOUNT_NOT_FOUND',
    );
    expectEnvelope(await allocate(system, small, { points: 1001, address: accounts[0]! }, auth), 400, 'INSUFFICIENT_POINTS');
    const paid = await system.db.sql`select 1 from payouts where quest_id = any(${[future, ended, deactivated, small]}::int[])`;
    expect(paid).toHaveLength(0);
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });
});

describe('POST /quests/:questId — request errors', () => {
  const validAddress = testAddress(1);
  test.for([
    ['unknown field', { points: 1, address: validAddress, extra: true }],
    ['points as string', { points: '1', address: validAddress }],
    ['points zero', { points: 0, address: validAddress }],
    ['points negative', { points: -5, address: validAddress }],
    ['points fractional', { points: 1.5, address: validAddress }],
    ['points beyond safe integer', { points: 2 ** 53, address: validAddress }],
    ['address missing', { points: 1 }],
    ['address too short', { points: 1, address: '0x1234' }],
    ['address not hex', { points: 1, address: `0x${'g'.repeat(40)}` }],
    ['address without 0x', { points: 1, address: 'a'.repeat(40) }],
    ['array body', [{ points: 1, address: validAddress }]],
  ] as const)('%s → 400 VALIDATION_FAILED, nothing written', async ([, body], { system, owner, quest }) => {
    expectEnvelope(await allocate(system, quest, body, { 'x-api-key': owner.apiKey }), 400, 'VALIDATION_FAILED');
    expect(await system.db.sql`select 1 from payouts where quest_id = ${quest}`).toHaveLength(0);
  });

  test('non-JSON and empty bodies → 400 VALIDATION_FAILED', async ({ system, owner, quest }) => {
    const auth = { 'x-api-key': owner.apiKey };
    expectEnvelope(await allocate(system, quest, '{"points": 1,', auth), 400, 'VALIDATION_FAILED');
    expectEnvelope(await allocate(system, quest, '', auth), 400, 'VALIDATION_FAILED');
  });

  test('a body that is not JSON → 400 UNSUPPORTED_MEDIA_TYPE, whatever its content type', async ({ system, owner, quest }) => {
    const auth = { 'x-api-key': owner.apiKey };
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      expectEnvelope(
        await post(system, `/quests/${quest}`, 'points=1', { ...auth, 'content-type': type }),
        400,
        'UNSUPPORTED_MEDIA_TYPE',
      );
    }
    // No content type at all: fetch sends none for a Blob without a type.
    const res = await fetch(`${system.baseUrl}/quests/${quest}`, {
      method: 'POST',
      headers: auth,
      body: new Blob(['{"points":1}']),
    });
    const body = await res.json();
    expectEnvelope({ status: res.status, body }, 400, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await system.db.sql`select 1 from payouts where quest_id = ${quest}`).toHaveLength(0);
  });

  test('a body over the limit → 400 PAYLOAD_TOO_LARGE, read by a client that writes it whole', async ({
    system,
    owner,
    quest,
    accounts,
  }) => {
    const big = Buffer.from(JSON.stringify({ points: 1, address: accounts[0]!, pad: 'x'.repeat(3 * 1024 * 1024) }));
    const headers = { 'x-api-key': owner.apiKey, 'content-type': 'application/json' };
    // Declared length: the server knows at once, answers, and keeps reading the upload.
    const declared = await rawPost(system.baseUrl, `/quests/${quest}`, big, { ...headers, 'content-length': String(big.length) });
    expectEnvelope(declared, 400, 'PAYLOAD_TOO_LARGE');
    expect(declared.uploadError).toBeUndefined();
    expect(declared.headers['x-request-id']).toBe(declared.body.requestId);
    // Chunked: the server finds out part-way through, and still lets the client finish.
    const chunked = await rawPost(system.baseUrl, `/quests/${quest}`, big, { ...headers, 'transfer-encoding': 'chunked' });
    expectEnvelope(chunked, 400, 'PAYLOAD_TOO_LARGE');
    expect(chunked.uploadError).toBeUndefined();
    // The batch route has a larger limit of its own, and the same behaviour past it.
    const hugeBatch = Buffer.alloc(5 * 1024 * 1024, ' ');
    const batch = await rawPost(system.baseUrl, `/quests/${quest}/batches`, hugeBatch, headers);
    expectEnvelope(batch, 400, 'PAYLOAD_TOO_LARGE');
    expect(batch.uploadError).toBeUndefined();
    expect(await system.db.sql`select 1 from payouts where quest_id = ${quest}`).toHaveLength(0);
  });

  test('curl --data-binary @big.json prints the error envelope', async ({ system, owner, quest, accounts }) => {
    const file = join(tmpdir(), `quest-big-${process.pid}-${quest}.json`);
    await writeFile(file, JSON.stringify({ points: 1, address: accounts[0]!, pad: 'x'.repeat(3 * 1024 * 1024) }));
    // curl as people run it (with its Expect: 100-continue), and with that switched off.
    for (const extra of [[], ['-H', 'Expect:']]) {
      const args = ['-sS', '-X', 'POST', `${system.baseUrl}/quests/${quest}`, '-H', 'content-type: application/json'];
      args.push('-H', `x-api-key: ${owner.apiKey}`, ...extra, '--data-binary', `@${file}`);
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
        (resolve, reject) => {
          const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
          let stdout = '';
          let stderr = '';
          child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
          child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
          child.on('error', reject);
          child.on('close', (exit) => resolve({ code: exit, stdout, stderr }));
        },
      );
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expectEnvelope({ status: 400, body: JSON.parse(stdout) }, 400, 'PAYLOAD_TOO_LARGE');
    }
  });

  test('the connection stays usable after an oversized body was answered', async ({ system, owner, quest, accounts }) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sendOn = (body: string) =>
        new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
          const req = httpRequest(
            new URL(`/quests/${quest}`, system.baseUrl),
            { method: 'POST', agent, headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json' } },
            (res) => {
              res.resume().on('end', () => resolve({ status: res.statusCode!, socket: req.socket }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const first = await sendOn(JSON.stringify({ points: 1, address: accounts[0]!, pad: 'x'.repeat(2 * 1024 * 1024) }));
      const second = await sendOn(JSON.stringify({ points: 1, address: accounts[0]! }));
      expect([first.status, second.status]).toEqual([400, 200]);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });

  test('bad quest ids → 400; unknown quest → 404', async ({ system, owner }) => {
    const auth = { 'x-api-key': owner.apiKey };
    for (const id of ['abc', '1.5', '-1', '0', '2147483648'])
      expectEnvelope(await allocate(system, id, { points: 1, address: testAddress(1) }, auth), 400, 'VALIDATION_FAILED');
    expectEnvelope(await allocate(system, 999_999, { points: 1, address: testAddress(1) }, auth), 404, 'QUEST_NOT_FOUND');
  });

  test('auth: missing, malformed, unknown key → 401 INVALID_API_KEY; another owner → 401 NOT_QUEST_OWNER', async ({
    system,
    owner,
    quest,
    makeQuest,
    accounts,
  }) => {
    const other = await createOwner(system.db.sql);
    const othersQuest = await makeQuest({ ownerId: other.id });
    const body = { points: 1, address: accounts[0]! };
    expectEnvelope(await allocate(system, quest, body, {}), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(system, quest, body, { 'x-api-key': 'pk_not_a_secret_key_123456' }), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(system, quest, body, { 'x-api-key': generateApiKey() }), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(system, quest, body, { 'x-api-key': other.apiKey }), 401, 'NOT_QUEST_OWNER');
    expectEnvelope(await allocate(system, othersQuest, body, { 'x-api-key': owner.apiKey }), 401, 'NOT_QUEST_OWNER');
    // The key was just used, so the server has it cached: the revocation reaches it through a
    // PostgreSQL notification.
    expect((await allocate(system, othersQuest, body, { 'x-api-key': other.apiKey })).status).toBe(200);
    await system.db.sql`update api_keys set revoked_at = now() where owner_id = ${other.id}`;
    await vi.waitFor(
      async () =>
        expectEnvelope(await allocate(system, othersQuest, body, { 'x-api-key': other.apiKey }), 401, 'INVALID_API_KEY'),
      { timeout: LOADED_MACHINE_MARGIN_MS, interval: 20 },
    );
    // Nothing paid after the revocation was seen, and nothing by the refused requests.
    const [{ n }] = (await system.db.sql`select count(*)::int as n from payouts where quest_id = ${othersQuest}`) as unknown as [
      { n: number },
    ];
    expect(n).toBeGreaterThanOrEqual(1);
    expect(await system.db.sql`select 1 from payouts where quest_id = ${quest}`).toHaveLength(0);
  });

  test('quests feature off → 400 QUESTS_DISABLED within 2 s, and back on', async ({ system, owner, quest, accounts }) => {
    const send = () => allocate(system, quest, { points: 1, address: accounts[0]! }, { 'x-api-key': owner.apiKey });
    try {
      await system.db.sql`update feature_flags set enabled = false where name = 'quests'`;
      await vi.waitFor(async () => expectEnvelope(await send(), 400, 'QUESTS_DISABLED'), {
        timeout: FLAG_CHANGE_SEEN_MS + LOADED_MACHINE_MARGIN_MS,
        interval: 50,
      });
    } finally {
      await system.db.sql`update feature_flags set enabled = true where name = 'quests'`;
    }
    await vi.waitFor(async () => expect((await send()).status).toBe(200), {
      timeout: FLAG_CHANGE_SEEN_MS + LOADED_MACHINE_MARGIN_MS,
      interval: 50,
    });
  });
});

describe('concurrency and idempotency', () => {
  test('500 concurrent allocations of 10 on a 1,000-point quest → exactly 100 payouts', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const id = await makeQuest({ totalPoints: 1000 });
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        allocate(system, id, { points: 10, address: accounts[i % accounts.length]! }, { 'x-api-key': owner.apiKey }),
      ),
    );
    const tally = new Map<string, number>();
    for (const r of results) {
      const k = `${r.status} ${r.body?.code ?? ''}`;
      tally.set(k, (tally.get(k) ?? 0) + 1);
    }
    expect(Object.fromEntries(tally)).toEqual({ '200 ': 100, '400 INSUFFICIENT_POINTS': 400 });
    const [row] = await system.db.sql<{ points_remaining: number; n: number }[]>`
      select points_remaining, (select count(*) from payouts where quest_id = ${id})::int8 as n from quests where id = ${id}`;
    expect(row).toEqual({ points_remaining: 0, n: 100 });
    expect(new Set(results.filter((r) => r.status === 200).map((r) => r.body.payout.id)).size).toBe(100);
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });

  test('one Idempotency-Key replayed 20 times concurrently → one payout; a different body → 400', async ({
    system,
    owner,
    quest,
    makeQuest,
    accounts,
  }) => {
    const headers = { 'x-api-key': owner.apiKey, 'idempotency-key': 'order-1' };
    const body = { points: 7, address: accounts[2]! };
    const results = await Promise.all(Array.from({ length: 20 }, () => allocate(system, quest, body, headers)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(results.map((r) => r.body.payout.id)).size).toBe(1);
    // One request decided it; every other answer replays that decision, and says so.
    const marks = results.map((r) => r.headers.get('idempotent-replayed'));
    expect(marks.filter((m) => m === null)).toHaveLength(1);
    expect(marks.filter((m) => m !== null)).toEqual(Array(19).fill('true'));
    const again = await allocate(system, quest, body, headers);
    expect(again.body.payout).toEqual(results[0]!.body.payout);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const reused = await allocate(system, quest, { ...body, points: 8 }, headers);
    expectEnvelope(reused, 400, 'IDEMPOTENCY_KEY_REUSED');
    expect(reused.headers.get('idempotent-replayed')).toBeNull();
    expectEnvelope(await allocate(system, quest, { ...body, address: accounts[3]! }, headers), 400, 'IDEMPOTENCY_KEY_REUSED');
    const payouts = await system.db.sql`select amount from payouts where quest_id = ${quest}`;
    expect([...payouts]).toEqual([{ amount: 7 }]);
    // The same key on another quest is another request.
    const elsewhere = await allocate(system, await makeQuest(), body, headers);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.payout.id).not.toBe(results[0]!.body.payout.id);
    expect(elsewhere.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a rejection replayed for its Idempotency-Key is the same rejection, marked Idempotent-Replayed', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const q = await makeQuest({ totalPoints: 5 });
    const headers = { 'x-api-key': owner.apiKey, 'idempotency-key': 'too-much' };
    const first = await allocate(system, q, { points: 10, address: accounts[0]! }, headers);
    expectEnvelope(first, 400, 'INSUFFICIENT_POINTS');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const replay = await allocate(system, q, { points: 10, address: accounts[0]! }, headers);
    expectEnvelope(replay, 400, 'INSUFFICIENT_POINTS');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  test('an Idempotency-Key longer than 255 characters → 400', async ({ system, owner, quest, accounts }) => {
    const res = await allocate(
      system,
      quest,
      { points: 1, address: accounts[0]! },
      { 'x-api-key': owner.apiKey, 'idempotency-key': 'k'.repeat(256) },
    );
    expectEnvelope(res, 400, 'VALIDATION_FAILED');
  });
});
