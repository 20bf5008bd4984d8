import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents, publishEvents } from '@quest/db';
import { createOwner } from '@quest/db/owners';
import { newId } from '@quest/domain';
import { createTestDatabase, createTestEndpoint, type TestDatabase } from '@quest/testing';
import { expectFailure, expectUsageError, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
let ownerId: string;
let endpointId: string;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });

beforeAll(async () => {
  db = await createTestDatabase();
  ownerId = (await createOwner(db.sql, { name: 'Hooked', pass: `0x${randomBytes(20).toString('hex')}` })).owner.id;
  endpointId = (await createTestEndpoint(db.sql, ownerId, { url: 'https://hooks.example.com/q', eventTypes: ['payout.created'] }))
    .id;
  const event = { ownerId, questId: null, allocationId: null, batchId: null, data: {}, createdAt: new Date() };
  await insertEvents(db.sql, [
    { ...event, id: newId('evt'), type: 'payout.created' },
    { ...event, id: newId('evt'), type: 'quest.budget_low' },
  ]);
  await publishEvents(db.sql, 100);
});
afterAll(async () => db?.drop());

describe('quest-admin webhooks', () => {
  it('lists endpoints, shows the delivery log, and replays', async () => {
    const list = jsonOf(await cli('webhooks', 'list', '--owner', ownerId, '--json'));
    expect(list.endpoints).toEqual([
      expect.objectContaining({ id: endpointId, owner: ownerId, events: ['payout.created'], status: 'enabled' }),
    ]);
    const log = jsonOf(await cli('webhooks', 'deliveries', '--endpoint', endpointId, '--json'));
    expect(log.deliveries).toEqual([expect.objectContaining({ type: 'payout.created', status: 'pending', attempts: 0 })]);
    const replay = jsonOf(await cli('webhooks', 'replay', '--endpoint', endpointId, '--since', '2020-01-01T00:00:00Z', '--json'));
    expect(replay.deliveries).toBe(1);
    const text = await cli('webhooks', 'deliveries', '--endpoint', endpointId, '--status', 'pending');
    expect(text.stdout).toContain('payout.created');
  });

  it('says so when the endpoint does not exist, and refuses bad ids', async () => {
    expectFailure(await cli('webhooks', 'deliveries', '--endpoint', newId('whe')), /No webhook endpoint whe_/);
    expectUsageError(await cli('webhooks', 'replay', '--endpoint', 'nope', '--since', '2020-01-01'), /webhook endpoint id/);
  });
});
