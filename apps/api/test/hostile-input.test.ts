import type { FastifyInstance } from 'fastify';
import { ID_PARAM_MAX_LENGTH, idempotentRequestKey, newId } from '@quest/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, createQuest, type SeededOwner, startTestApp, type TestApp } from './helpers.ts';

/**
 * Hostile input on the owner's routes (issue 11): ids with NUL bytes or of the wrong format, loose
 * numbers in query strings, ids longer than the router's default limit. Each answer is a 400
 * VALIDATION_FAILED envelope, never a 500.
 */

let t: TestApp;
let owner: SeededOwner;
let questId: number;

/** A test-only route that hands a client's text to PostgreSQL unvalidated, as a missed check would. */
function rawTextRoute(app: FastifyInstance) {
  app.get<{ Querystring: { v?: string } }>('/__test/pg-text', { schema: { hide: true } }, async (request) => {
    const sql = t.sql;
    const [row] = await sql<{ n: number }[]>`select ${request.query.v ?? ''}::int as n`;
    return { n: row!.n };
  });
}

beforeAll(async () => {
  t = await startTestApp({ extend: rawTextRoute });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

const get = (url: string) => t.request({ method: 'GET', url, headers: { 'x-api-key': owner.apiKey } });

function expect400(res: Awaited<ReturnType<typeof get>>) {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED', requestId: expect.any(String) });
}

describe('ids in paths are validated by their real format (item 1)', () => {
  it.each([
    `/quests/{q}/allocations/%00`,
    `/quests/{q}/allocations/a%00b`,
    `/quests/{q}/allocations/alc_%00`,
    `/quests/{q}/batches/%00`,
    `/quests/{q}/batches/bat_k${'A'.repeat(31)}%00`,
    `/quests/{q}/allocations/pay_01jf8q0000000000000000000`,
    `/quests/{q}/allocations/bat_k${'A'.repeat(32)}:01`,
    `/quests/{q}/allocations/bat_k${'A'.repeat(32)}:-1`,
    `/quests/{q}/batches/alc_k${'A'.repeat(32)}`,
  ])('answers 400 for %s', async (path) => {
    expect400(await get(path.replace('{q}', String(questId))));
  });

  it('still looks up well-formed ids of every kind (404 when unknown)', async () => {
    const derivedAlc = idempotentRequestKey(owner.id, questId, 'k1', 'alc');
    const derivedBat = idempotentRequestKey(owner.id, questId, 'k1', 'bat');
    for (const id of [newId('alc'), derivedAlc, `${newId('bat')}:0`, `${derivedBat}:9999`]) {
      const res = await get(`/quests/${questId}/allocations/${id}`);
      expect(res.statusCode, id).toBe(404);
      expect(res.json().code).toBe('ALLOCATION_NOT_FOUND');
    }
    for (const id of [newId('bat'), derivedBat]) {
      const res = await get(`/quests/${questId}/batches/${id}`);
      expect(res.statusCode, id).toBe(404);
      expect(res.json().code).toBe('BATCH_NOT_FOUND');
    }
  });

  it('maps PostgreSQL invalid-text errors (22021, 22P02) to 400, not 500', async () => {
    for (const v of ['%00', 'abc']) {
      const res = await t.app.inject({ method: 'GET', url: `/__test/pg-text?v=${v}` });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_FAILED', requestId: expect.any(String) });
    }
  });
});

describe('one strict query-parameter rule everywhere (item 5)', () => {
  it.each(['limit=0x10', 'limit=1e2', 'limit=01', 'limit=%201', 'limit=-0', 'offset=', 'limit=', 'limit=1.0'])(
    'GET …/batches/{id}?%s is refused like on every other route',
    async (query) => {
      expect400(await get(`/quests/${questId}/batches/${newId('bat')}?${query}`));
      expect400(await get(`/quests/${questId}?${query}`));
    },
  );

  it('accepts plain digits (404 for an unknown batch)', async () => {
    const res = await get(`/quests/${questId}/batches/${newId('bat')}?limit=10&offset=0`);
    expect(res.statusCode).toBe(404);
  });
});

describe('ids up to the documented length reach validation (item 6)', () => {
  it('documents the same maximum the router allows', () => {
    const doc = t.contract.doc as unknown as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema: { maxLength?: number } }[] }>>;
    };
    const param = doc.paths['/quests/{questId}/allocations/{allocationId}']!.get!.parameters!.find(
      (p) => p.name === 'allocationId',
    )!;
    expect(param.schema.maxLength).toBe(ID_PARAM_MAX_LENGTH);
  });

  it.each([101, ID_PARAM_MAX_LENGTH])('answers an id of %i characters with VALIDATION_FAILED from the schema', async (n) => {
    const res = await get(`/quests/${questId}/allocations/alc_${'x'.repeat(n - 4)}`);
    expect400(res);
    expect(res.json().details[0]).toMatchObject({ location: 'params', path: 'allocationId' });
  });
});
