import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEnvironment, parseSecretKey } from '@quest/config';
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

  it('local: one command sets up webhooks on this machine in the .env the API reads; a second run keeps the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quest-admin-webhooks-local-'));
    try {
      const file = join(dir, '.env');
      await writeFile(file, 'PORT=3917\n');
      const first = await runCli(['webhooks', 'local'], { DATABASE_URL: db.url, ENV_FILE: file });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toContain('Restart the API and the worker');
      const written = await readFile(file, 'utf8');
      // What the API and the worker read at start: the file's own line kept, a usable key, private URLs.
      const { env } = loadEnvironment({ ENV_FILE: file }, dir);
      expect(env).toMatchObject({ PORT: '3917', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
      expect(parseSecretKey(env.WEBHOOK_SECRET_KEY ?? '')).toHaveLength(32);
      const again = jsonOf(await runCli(['webhooks', 'local', '--json'], { DATABASE_URL: db.url, ENV_FILE: file }));
      expect(again).toEqual({ file, added: [], kept: ['WEBHOOK_SECRET_KEY', 'WEBHOOK_ALLOW_PRIVATE_URLS'] });
      expect(await readFile(file, 'utf8')).toBe(written);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
