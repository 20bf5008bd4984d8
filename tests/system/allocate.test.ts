import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '@quest/domain';
import { address, auditViolations, get, post, seed, startSystem, type System } from './harness.ts';

let system: System;
let owner: Awaited<ReturnType<typeof seed>>;
let other: Awaited<ReturnType<typeof seed>>;

beforeAll(async () => {
  system = await startSystem({ workers: 1, partitions: 4 });
  owner = await seed(system, { quests: 6, total: 1000, accounts: 50 });
  other = await seed(system, { quests: 1 });
});
afterAll(async () => system?.stop());

const auth = () => ({ 'x-api-key': owner.apiKey });
const allocate = (questId: number, body: unknown, headers: Record<string, string> = auth()) =>
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

describe('POST /quests/:questId — success', () => {
  it('answers the payout field by field, credits the account and lowers the budget', async () => {
    const q = owner.questIds[0]!;
    const lower = owner.accounts[0]!.toLowerCase();
    const before = Date.now();
    const res = await allocate(q, { points: 25, address: lower });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body)).toEqual(['payout']);
    const { payout } = res.body;
    expect(Object.keys(payout).sort()).toEqual(['account', 'amount', 'created_at', 'id']);
    expect(payout.id).toMatch(/^pay_[0-9a-z]{26}$/);
    expect(payout.amount).toBe(25);
    expect(typeof payout.amount).toBe('number');
    expect(payout.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(payout.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(payout.account).toEqual({ pass: owner.accounts[0] });
    const [quest] = await system.db.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${q}`;
    expect(quest!.points_remaining).toBe(975);
    const [acc] = await system.db.sql<
      { balance: number }[]
    >`select balance from accounts where pass_address = ${owner.accounts[0]!}`;
    expect(acc!.balance).toBe(25);
    const detail = await get(system, `/quests/${q}`, auth());
    expect(detail.status).toBe(200);
    expect(detail.body.points_remaining).toBe(975);
    expect(detail.body.payouts[0]).toEqual(payout);
  });

  it('answers addresses in EIP-55 checksum form whatever case they arrive in', async () => {
    const mixed = '0x52908400098527886e0f7030069857d2e4169ee7';
    await system.db.sql`insert into accounts (pass_address) values ('0x52908400098527886E0F7030069857D2E4169EE7')`;
    const res = await allocate(owner.questIds[0]!, { points: 1, address: mixed.toUpperCase().replace('0X', '0x') });
    expect(res.status).toBe(200);
    expect(res.body.payout.account.pass).toBe('0x52908400098527886E0F7030069857D2E4169EE7');
  });
});

describe('POST /quests/:questId — decisions at decision time', () => {
  it('60 → 50 → 40 on a budget of 100 gives accept, reject, accept, every time', async () => {
    for (let round = 0; round < 5; round++) {
      const [{ id }] = (await system.db.sql`
        insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
        values (${owner.ownerId}, 'edge', now() - interval '1 hour', now() + interval '1 day', 100, 100) returning id`) as unknown as [
        { id: number },
      ];
      const a = await allocate(id, { points: 60, address: owner.accounts[1]! });
      const b = await allocate(id, { points: 50, address: owner.accounts[1]! });
      const c = await allocate(id, { points: 40, address: owner.accounts[1]! });
      expect([a.status, b.status, c.status]).toEqual([200, 400, 200]);
      expectEnvelope(b, 400, 'INSUFFICIENT_POINTS');
    }
  });

  it('rejects outside the window, with the action type deactivated, and for unknown accounts', async () => {
    const [future, ended, deactivated] = owner.questIds.slice(1, 4);
    await system.db
      .sql`update quests set start_at = now() + interval '1 hour', end_at = now() + interval '2 hours' where id = ${future!}`;
    await system.db
      .sql`update quests set start_at = now() - interval '2 hours', end_at = now() - interval '1 second' where id = ${ended!}`;
    await system.db.sql`update quests set action_status = 'deactivated' where id = ${deactivated!}`;
    expectEnvelope(await allocate(future!, { points: 1, address: owner.accounts[0]! }), 400, 'QUEST_NOT_ACTIVE');
    expectEnvelope(await allocate(ended!, { points: 1, address: owner.accounts[0]! }), 400, 'QUEST_NOT_ACTIVE');
    expectEnvelope(await allocate(deactivated!, { points: 1, address: owner.accounts[0]! }), 400, 'ACTION_TYPE_INACTIVE');
    expectEnvelope(await allocate(owner.questIds[4]!, { points: 1, address: address(0xdead_beef) }), 400, 'ACCOUNT_NOT_FOUND');
    expectEnvelope(await allocate(owner.questIds[4]!, { points: 1001, address: owner.accounts[0]! }), 400, 'INSUFFICIENT_POINTS');
    const paid = await system.db.sql`select 1 from payouts where quest_id = any(${[future!, ended!, deactivated!]}::int[])`;
    expect(paid).toHaveLength(0);
  });
});

describe('POST /quests/:questId — request errors', () => {
  const q = () => owner.questIds[5]!;
  it.each([
    ['unknown field', { points: 1, address: address(1), extra: true }],
    ['points as string', { points: '1', address: address(1) }],
    ['points zero', { points: 0, address: address(1) }],
    ['points negative', { points: -5, address: address(1) }],
    ['points fractional', { points: 1.5, address: address(1) }],
    ['points beyond safe integer', { points: 2 ** 53, address: address(1) }],
    ['address missing', { points: 1 }],
    ['address too short', { points: 1, address: '0x1234' }],
    ['address not hex', { points: 1, address: `0x${'g'.repeat(40)}` }],
    ['address without 0x', { points: 1, address: 'a'.repeat(40) }],
    ['array body', [{ points: 1, address: address(1) }]],
  ])('%s → 400 VALIDATION_FAILED', async (_name, body) => {
    expectEnvelope(await allocate(q(), body), 400, 'VALIDATION_FAILED');
  });

  it('non-JSON and empty bodies → 400 VALIDATION_FAILED', async () => {
    expectEnvelope(await allocate(q(), '{"points": 1,'), 400, 'VALIDATION_FAILED');
    expectEnvelope(await allocate(q(), ''), 400, 'VALIDATION_FAILED');
  });

  it('a wrong content type → 415, an oversized body → 413', async () => {
    const res = await post(system, `/quests/${q()}`, 'points=1', { ...auth(), 'content-type': 'text/plain' });
    expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const big = await allocate(q(), { points: 1, address: address(1), pad: 'x'.repeat(2 * 1024 * 1024) });
    expectEnvelope(big, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('bad quest ids → 400; unknown quest → 404', async () => {
    for (const id of ['abc', '1.5', '-1', '0', '2147483648'])
      expectEnvelope(await allocate(id as never, { points: 1, address: address(1) }), 400, 'VALIDATION_FAILED');
    expectEnvelope(await allocate(999_999, { points: 1, address: address(1) }), 404, 'QUEST_NOT_FOUND');
  });

  it('auth: missing, malformed, unknown key → 401 INVALID_API_KEY; another owner → 401 NOT_QUEST_OWNER', async () => {
    const body = { points: 1, address: owner.accounts[0]! };
    expectEnvelope(await allocate(q(), body, {}), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(q(), body, { 'x-api-key': 'pk_not_a_secret_key_123456' }), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(q(), body, { 'x-api-key': generateApiKey() }), 401, 'INVALID_API_KEY');
    expectEnvelope(await allocate(q(), body, { 'x-api-key': other.apiKey }), 401, 'NOT_QUEST_OWNER');
    expectEnvelope(await allocate(other.questIds[0]!, body), 401, 'NOT_QUEST_OWNER');
    // The key was just used, so the server has it cached: the revocation reaches it through a
    // PostgreSQL notification, within milliseconds.
    expect(
      (await allocate(other.questIds[0]!, { points: 1, address: other.accounts[0]! }, { 'x-api-key': other.apiKey })).status,
    ).toBe(200);
    await system.db.sql`update api_keys set revoked_at = now() where owner_id = ${other.ownerId}`;
    const revokedAt = Date.now();
    let res = await allocate(other.questIds[0]!, body, { 'x-api-key': other.apiKey });
    while (res.status !== 401 && Date.now() - revokedAt < 2000)
      res = await allocate(other.questIds[0]!, body, { 'x-api-key': other.apiKey });
    expectEnvelope(res, 401, 'INVALID_API_KEY');
  });

  it('quests feature off → 400 QUESTS_DISABLED, within 2 s, and back on', async () => {
    await system.db.sql`update feature_flags set enabled = false where name = 'quests'`;
    await new Promise((r) => setTimeout(r, 2100));
    expectEnvelope(await allocate(q(), { points: 1, address: owner.accounts[0]! }), 400, 'QUESTS_DISABLED');
    await system.db.sql`update feature_flags set enabled = true where name = 'quests'`;
    await new Promise((r) => setTimeout(r, 2100));
    expect((await allocate(q(), { points: 1, address: owner.accounts[0]! })).status).toBe(200);
  });

  it('nothing was written by any rejected request, and the ledger audits clean', async () => {
    const strays = await system.db.sql`select 1 from payouts where quest_id = ${q()} and amount <> 1`;
    expect(strays).toHaveLength(0);
    expect(await auditViolations(system)).toEqual([]);
  });
});

describe('concurrency and idempotency', () => {
  it('500 concurrent allocations of 10 on a 1,000-point quest → exactly 100 payouts', async () => {
    const [{ id }] = (await system.db.sql`
      insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
      values (${owner.ownerId}, 'race', now() - interval '1 hour', now() + interval '1 day', 1000, 1000) returning id`) as unknown as [
      { id: number },
    ];
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) => allocate(id, { points: 10, address: owner.accounts[i % owner.accounts.length]! })),
    );
    const tally = new Map<string, number>();
    for (const r of results)
      tally.set(`${r.status} ${r.body?.code ?? ''}`, (tally.get(`${r.status} ${r.body?.code ?? ''}`) ?? 0) + 1);
    expect(Object.fromEntries(tally)).toEqual({ '200 ': 100, '400 INSUFFICIENT_POINTS': 400 });
    expect(results.filter((r) => r.status === 200)).toHaveLength(100);
    expect(results.filter((r) => r.status === 400 && r.body.code === 'INSUFFICIENT_POINTS')).toHaveLength(400);
    const [row] = await system.db.sql<{ points_remaining: number; n: number }[]>`
      select points_remaining, (select count(*) from payouts where quest_id = ${id})::int8 as n from quests where id = ${id}`;
    expect(row).toEqual({ points_remaining: 0, n: 100 });
    expect(new Set(results.filter((r) => r.status === 200).map((r) => r.body.payout.id)).size).toBe(100);
    expect(await auditViolations(system)).toEqual([]);
  });

  it('one Idempotency-Key replayed 20 times concurrently → one payout; a different body → 400', async () => {
    const q = owner.questIds[5]!;
    const headers = { ...auth(), 'idempotency-key': `order-${Date.now()}` };
    const body = { points: 7, address: owner.accounts[2]! };
    const results = await Promise.all(Array.from({ length: 20 }, () => allocate(q, body, headers)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(results.map((r) => r.body.payout.id)).size).toBe(1);
    const again = await allocate(q, body, headers);
    expect(again.body.payout).toEqual(results[0]!.body.payout);
    expectEnvelope(await allocate(q, { ...body, points: 8 }, headers), 400, 'IDEMPOTENCY_KEY_REUSED');
    expectEnvelope(await allocate(q, { ...body, address: owner.accounts[3]! }, headers), 400, 'IDEMPOTENCY_KEY_REUSED');
    const [{ n }] = (await system.db
      .sql`select count(*)::int8 as n from payouts where quest_id = ${q} and amount = 7`) as unknown as [{ n: number }];
    expect(n).toBe(1);
    // The same key on another quest is another request.
    const elsewhere = await allocate(owner.questIds[4]!, body, headers);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.payout.id).not.toBe(results[0]!.body.payout.id);
  });

  it('an Idempotency-Key longer than 255 characters → 400', async () => {
    const res = await allocate(
      owner.questIds[5]!,
      { points: 1, address: owner.accounts[0]! },
      { ...auth(), 'idempotency-key': 'k'.repeat(256) },
    );
    expectEnvelope(res, 400, 'VALIDATION_FAILED');
  });
});

describe('contract', () => {
  it('every response of this file matched the OpenAPI document the server publishes', () => {
    // post()/get() throw on a mismatch; this makes sure they really checked the traffic above.
    expect(system.contract.checked).toBeGreaterThanOrEqual(578); // every request this file sends
  });
});
