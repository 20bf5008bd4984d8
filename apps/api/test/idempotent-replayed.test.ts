import type { Allocator, Delivery } from '@quest/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createQuest,
  randomAddress,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * `Idempotent-Replayed: true` marks an answer that replays an outcome decided earlier for the same
 * Idempotency-Key (the header Stripe uses). The allocator here answers whatever outcome the test
 * sets, so each case is exact; the system tests show the real ledger's replays carry it too.
 */

let next: Delivery;
const scripted: Allocator = {
  allocate: async () => next,
  runBatch: async () => undefined,
  ping: async () => {},
  liveWorkers: async () => 1,
  close: async () => {},
};

let t: TestApp;
let owner: SeededOwner;
let questId: number;
const address = randomAddress();
const payout = {
  id: 'pay_01jf8q4g0x7m3r6v2k9d1n5bta',
  amount: 5,
  created_at: '2026-03-01T12:00:00.123Z',
  account: { pass: address },
};

beforeAll(async () => {
  t = await startTestApp({ allocator: scripted });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  await createAccount(t.sql, address);
});
afterAll(async () => {
  await t?.close();
});

const post = (url: string, payload: Record<string, unknown>, key?: string) =>
  t.request({
    method: 'POST',
    url,
    payload,
    headers: { 'x-api-key': owner.apiKey, ...(key ? { 'idempotency-key': key } : {}) },
  });
const allocate = (key?: string) => post(`/quests/${questId}`, { points: 5, address }, key);

describe('Idempotent-Replayed', () => {
  it('is absent from an outcome decided by this request', async () => {
    next = { kind: 'decided', outcome: { status: 'completed', payout } };
    const res = await allocate('order-1');
    expect(res.statusCode).toBe(200);
    expect(res.headers).not.toHaveProperty('idempotent-replayed');
  });

  it('is true on a payout or a rejection replayed for the Idempotency-Key', async () => {
    next = { kind: 'decided', outcome: { status: 'completed', payout, replayed: true } };
    const paid = await allocate('order-1');
    expect(paid.statusCode).toBe(200);
    expect(paid.headers['idempotent-replayed']).toBe('true');
    next = { kind: 'decided', outcome: { status: 'rejected', code: 'INSUFFICIENT_POINTS', replayed: true } };
    const refused = await allocate('order-2');
    expect(refused.json()).toMatchObject({ statusCode: 400, code: 'INSUFFICIENT_POINTS' });
    expect(refused.headers['idempotent-replayed']).toBe('true');
  });

  it('is absent without an Idempotency-Key (a replay then only means a redelivered job) and on a pending answer', async () => {
    next = { kind: 'decided', outcome: { status: 'completed', payout, replayed: true } };
    expect((await allocate()).headers).not.toHaveProperty('idempotent-replayed');
    next = { kind: 'undecided', reason: 'timeout', job: 'queued', jobId: '1', enqueuedAt: Date.now() };
    const pending = await allocate('order-3');
    expect(pending.statusCode).toBe(202);
    expect(pending.headers).not.toHaveProperty('idempotent-replayed');
  });

  it('marks a batch answer when an earlier request with the key created the batch', async () => {
    const body = { allocations: [{ address, points: 5 }] };
    const first = await post(`/quests/${questId}/batches`, body, 'import-1');
    expect(first.statusCode).toBe(202);
    expect(first.headers).not.toHaveProperty('idempotent-replayed');
    const again = await post(`/quests/${questId}/batches`, body, 'import-1');
    expect(again.statusCode).toBe(202);
    expect(again.json().batch.id).toBe(first.json().batch.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await post(`/quests/${questId}/batches`, { allocations: [{ address, points: 6 }] }, 'import-1');
    expect(other.json()).toMatchObject({ statusCode: 400, code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(other.headers).not.toHaveProperty('idempotent-replayed');
    const unkeyed = await post(`/quests/${questId}/batches`, body);
    expect(unkeyed.headers).not.toHaveProperty('idempotent-replayed');
  });
});
