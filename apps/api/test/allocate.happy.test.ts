import { applyRequests } from '@quest/db';
import type { RequestItem } from '@quest/domain';
import type { Delivery } from '@quest/queue';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createQuest,
  ISO_UTC,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * POST /quests/{questId} and GET /quests/{questId}/allocations/{id}, through the service, with the
 * queue and the worker scripted: what the API answers for each way a decision can come back.
 */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let address: `0x${string}`;
/** How the scripted pipeline treats the next request. */
let onAllocate: (item: RequestItem) => Promise<Delivery>;
const allocator = scriptedAllocator({ onAllocate: (item) => onAllocate(item) });

/** Decide the item with the real ledger and reply with its outcome, as a worker would. */
const decideNow = async (item: RequestItem): Promise<Delivery> => {
  const [outcome] = await applyRequests(t.sql, [item], { firstDelivery: true });
  return { kind: 'decided', outcome: outcome! };
};

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
  address = randomAddress();
  await createAccount(t.sql, address);
});
afterAll(async () => {
  await t.close();
});
beforeEach(() => {
  onAllocate = decideNow;
});

const allocate = (body: object, headers: Record<string, string> = {}) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: body,
  });
const status = (location: string) => t.request({ method: 'GET', url: location, headers: { 'x-api-key': owner.apiKey } });

describe('POST /quests/:questId', () => {
  it('answers 200 with the payout decided for it, the address in checksum form', async () => {
    const res = await allocate({ points: 5, address: address.toLowerCase() });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      payout: {
        id: expect.stringMatching(/^pay_/),
        amount: 5,
        created_at: expect.stringMatching(ISO_UTC),
        account: { pass: address },
      },
    });
    // The worker gets it lower-cased (no Keccak-256 per request): the ledger matches accounts in any case.
    expect(allocator.items.at(-1)).toMatchObject({
      questId,
      points: 5,
      address: address.toLowerCase(),
      key: expect.stringMatching(/^alc_0/),
    });
  });

  it('hands the worker its request id and a request key scoped by owner, quest and Idempotency-Key', async () => {
    const res = await allocate({ points: 1, address }, { 'idempotency-key': 'order-1', 'x-request-id': 'trace-me' });
    expect(res.statusCode).toBe(200);
    const sent = allocator.items.at(-1)!;
    expect(sent.requestId).toBe('trace-me');
    expect(sent.key).toMatch(/^alc_k/);
    await allocate({ points: 1, address }, { 'idempotency-key': 'order-1' });
    expect(allocator.items.at(-1)!.key).toBe(sent.key);
  });

  it('answers 202 with a Location when undecided, and the status route then says pending', async () => {
    onAllocate = async () => ({ kind: 'undecided', reason: 'timeout', job: 'queued', jobId: '7', enqueuedAt: Date.now() });
    const res = await allocate({ points: 3, address });
    expect(res.statusCode).toBe(202);
    const { allocation } = res.json();
    expect(allocation).toEqual({
      id: expect.stringMatching(/^alc_/),
      status: 'pending',
      updated_at: expect.stringMatching(ISO_UTC),
    });
    expect(res.headers.location).toBe(`/quests/${questId}/allocations/${allocation.id}`);
    const later = await status(res.headers.location as string);
    expect(later.statusCode).toBe(200);
    expect(later.json().allocation).toMatchObject({ id: allocation.id, status: 'pending' });
    const [marker] = await t.sql<
      { job_id: string }[]
    >`select job_id from allocation_requests where request_key = ${allocation.id}`;
    expect(marker?.job_id).toBe('7');
  });

  it('answers from the database when the job finished but its reply was lost', async () => {
    onAllocate = async (item) => {
      await decideNow(item);
      return { kind: 'undecided', reason: 'lost', job: 'completed', jobId: '8', enqueuedAt: Date.now() };
    };
    const res = await allocate({ points: 4, address });
    expect(res.statusCode).toBe(200);
    expect(res.json().payout).toMatchObject({ amount: 4, account: { pass: address } });
  });

  it('answers 202 when the job is gone and the database has no decision yet', async () => {
    onAllocate = async () => ({ kind: 'undecided', reason: 'lost', job: 'unknown', jobId: '9', enqueuedAt: Date.now() });
    const res = await allocate({ points: 2, address });
    expect(res.statusCode).toBe(202);
  });

  it('GET of a decided allocation shows its payout; a batch item is addressed as <batch id>:<index>', async () => {
    onAllocate = async () => ({ kind: 'undecided', reason: 'timeout', job: 'queued', jobId: '10', enqueuedAt: Date.now() });
    const pending = await allocate({ points: 6, address });
    const id = pending.json().allocation.id as string;
    await applyRequests(t.sql, [{ key: id, questId, points: 6, address }], { firstDelivery: false });
    const res = await status(pending.headers.location as string);
    expect(res.json().allocation).toEqual({
      id,
      status: 'completed',
      payout: expect.objectContaining({ amount: 6, account: { pass: address } }),
      updated_at: expect.stringMatching(ISO_UTC),
    });
  });
});
