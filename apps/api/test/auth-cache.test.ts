import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import type { DomainError } from '@quest/domain';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { QuestAuthorizer } from '../src/auth.ts';
import { createApiKey, createOwner, createQuest, revokeApiKey } from './helpers.ts';

let db: TestDatabase;
let sql: Sql;
const logger = { info: () => {}, warn: () => {} };
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'OK',
    (e: DomainError) => e.code,
  );

async function eventually(check: () => Promise<string>, want: string, ms = 2000): Promise<string> {
  const deadline = Date.now() + ms;
  let got = await check();
  while (got !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    got = await check();
  }
  return got;
}

/** An owner with one key and one quest. */
async function ownerWithQuest(): Promise<{ key: string; quest: number }> {
  const owner = await createOwner(db.sql);
  return { key: await createApiKey(db.sql, owner.id), quest: await createQuest(db.sql, { ownerId: owner.id }) };
}

beforeAll(async () => {
  db = await createTestDatabase({ max: 2 });
  sql = createSql(db.url, { max: 2 });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await db?.drop();
});

describe('QuestAuthorizer with a cache', () => {
  it('answers like the database: unknown key, unknown quest, another owner, the owner', async () => {
    const auth = await QuestAuthorizer.start(sql, { ttlMs: 60_000, logger });
    const a = await createOwner(db.sql);
    const b = await createOwner(db.sql);
    const keyA = await createApiKey(db.sql, a.id);
    const questB = await createQuest(db.sql, { ownerId: b.id });
    const questA = await createQuest(db.sql, { ownerId: a.id });
    expect(await codeOf(auth.authorize('sk_unknownunknownunknown1', questA))).toBe('INVALID_API_KEY');
    expect(await codeOf(auth.authorize(keyA, 999_999))).toBe('QUEST_NOT_FOUND');
    expect(await codeOf(auth.authorize(keyA, questB))).toBe('NOT_QUEST_OWNER');
    expect(await auth.authorize(keyA, questA)).toEqual({ ownerId: a.id, quest: { id: questA, ownerId: a.id } });
    // Cached answers stay the same.
    expect(await codeOf(auth.authorize(keyA, questB))).toBe('NOT_QUEST_OWNER');
    await auth.stop();
  });

  it('forgets a revoked key as soon as PostgreSQL notifies the change, on every process', async () => {
    const otherProcessSql = createSql(db.url, { max: 1 });
    const [one, two] = await Promise.all([
      QuestAuthorizer.start(sql, { ttlMs: 60_000, logger }),
      QuestAuthorizer.start(otherProcessSql, { ttlMs: 60_000, logger }),
    ]);
    const { key, quest } = await ownerWithQuest();
    expect(await codeOf(one.authorize(key, quest))).toBe('OK');
    expect(await codeOf(two.authorize(key, quest))).toBe('OK');
    await revokeApiKey(db.sql, key);
    expect(await eventually(() => codeOf(one.authorize(key, quest)), 'INVALID_API_KEY')).toBe('INVALID_API_KEY');
    expect(await eventually(() => codeOf(two.authorize(key, quest)), 'INVALID_API_KEY')).toBe('INVALID_API_KEY');
    await Promise.all([one.stop(), two.stop()]);
    await otherProcessSql.end({ timeout: 1 });
  });

  it('really answers from memory until the TTL runs out (shown with the notification switched off)', async () => {
    const auth = await QuestAuthorizer.start(sql, { ttlMs: 400, logger });
    const { key, quest } = await ownerWithQuest();
    expect(await codeOf(auth.authorize(key, quest))).toBe('OK');
    await db.sql`alter table api_keys disable trigger api_keys_auth_changed`;
    try {
      await revokeApiKey(db.sql, key);
      await new Promise((r) => setTimeout(r, 100));
      expect(await codeOf(auth.authorize(key, quest))).toBe('OK'); // cached
      await new Promise((r) => setTimeout(r, 400));
      expect(await codeOf(auth.authorize(key, quest))).toBe('INVALID_API_KEY'); // expired, asked again
    } finally {
      await db.sql`alter table api_keys enable trigger api_keys_auth_changed`;
      await auth.stop();
    }
  });

  it('without a cache, every check asks the database', async () => {
    const auth = QuestAuthorizer.uncached(sql);
    const { key, quest } = await ownerWithQuest();
    expect(await codeOf(auth.authorize(key, quest))).toBe('OK');
    await db.sql`alter table api_keys disable trigger api_keys_auth_changed`;
    try {
      await revokeApiKey(db.sql, key);
      expect(await codeOf(auth.authorize(key, quest))).toBe('INVALID_API_KEY');
    } finally {
      await db.sql`alter table api_keys enable trigger api_keys_auth_changed`;
    }
  });
});
