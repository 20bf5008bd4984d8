import { describe, expect } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import type { DomainError } from '@quest/domain';
import { createApiKey, createOwner, createQuest, revokeApiKey, test as base } from '@quest/testing';
import { QuestAuthorizer } from '../src/auth.ts';

const logger = { info: () => {}, warn: () => {} };
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'OK',
    (e: DomainError) => e.code,
  );

/** How long to keep polling for a notification before failing: a cut-off, not a promised bound. */
const NOTIFY_POLL = { timeout: 10_000, interval: 20 };

// The authorizer's own pool, as the API process has (its LISTEN connection is separate from the
// pool the rows are written with).
const test = base.extend('sql', { scope: 'file' }, async ({ database }, { onCleanup }): Promise<Sql> => {
  const sql = createSql(database.url, { max: 2 });
  onCleanup(() => sql.end({ timeout: 1 }));
  return sql;
});

/** Run `body` with the notification trigger off, so only the TTL can make the cache forget a key. */
async function withoutNotifications(sql: Sql, body: () => Promise<void>): Promise<void> {
  await sql`alter table api_keys disable trigger api_keys_auth_changed`;
  try {
    await body();
  } finally {
    await sql`alter table api_keys enable trigger api_keys_auth_changed`;
  }
}

describe('QuestAuthorizer with a cache', () => {
  test('answers like the database: unknown key, unknown quest, another owner, the owner', async ({ database, sql }) => {
    const auth = await QuestAuthorizer.start(sql, { ttlMs: 60_000, logger });
    try {
      const a = await createOwner(database.sql);
      const b = await createOwner(database.sql);
      const keyA = await createApiKey(database.sql, a.id);
      const questB = await createQuest(database.sql, { ownerId: b.id });
      const questA = await createQuest(database.sql, { ownerId: a.id });
      expect(await codeOf(auth.authorize('sk_unknownunknownunknown1', questA))).toBe('INVALID_API_KEY');
      expect(await codeOf(auth.authorize(keyA, 999_999))).toBe('QUEST_NOT_FOUND');
      expect(await codeOf(auth.authorize(keyA, questB))).toBe('NOT_QUEST_OWNER');
      expect(await auth.authorize(keyA, questA)).toEqual({ ownerId: a.id, quest: { id: questA, ownerId: a.id } });
      // Cached answers stay the same.
      expect(await codeOf(auth.authorize(keyA, questB))).toBe('NOT_QUEST_OWNER');
    } finally {
      await auth.stop();
    }
  });

  test('forgets a revoked key as soon as PostgreSQL notifies the change, on every process', async ({
    database,
    sql,
    owner,
    quest,
  }) => {
    const otherProcessSql = createSql(database.url, { max: 1 });
    const [one, two] = await Promise.all([
      QuestAuthorizer.start(sql, { ttlMs: 60_000, logger }),
      QuestAuthorizer.start(otherProcessSql, { ttlMs: 60_000, logger }),
    ]);
    try {
      expect(await codeOf(one.authorize(owner.apiKey, quest))).toBe('OK');
      expect(await codeOf(two.authorize(owner.apiKey, quest))).toBe('OK');
      await revokeApiKey(database.sql, owner.apiKey);
      // The TTL is a minute: only the notification can make either process ask again.
      await expect.poll(() => codeOf(one.authorize(owner.apiKey, quest)), NOTIFY_POLL).toBe('INVALID_API_KEY');
      await expect.poll(() => codeOf(two.authorize(owner.apiKey, quest)), NOTIFY_POLL).toBe('INVALID_API_KEY');
    } finally {
      await Promise.all([one.stop(), two.stop()]);
      await otherProcessSql.end({ timeout: 1 });
    }
  });

  test('really answers from memory until the TTL runs out (shown with the notification switched off)', async ({
    database,
    sql,
    owner,
    quest,
  }) => {
    // The cache's clock is ours: the TTL runs out when we move it, not after a real wait.
    let now = Date.UTC(2025, 0, 1);
    const ttlMs = 400;
    const auth = await QuestAuthorizer.start(sql, { ttlMs, logger, now: () => now });
    try {
      expect(await codeOf(auth.authorize(owner.apiKey, quest))).toBe('OK'); // cached until now + ttlMs
      await withoutNotifications(database.sql, async () => {
        await revokeApiKey(database.sql, owner.apiKey);
        now += ttlMs - 1;
        expect(await codeOf(auth.authorize(owner.apiKey, quest))).toBe('OK'); // still cached
        now += 1;
        expect(await codeOf(auth.authorize(owner.apiKey, quest))).toBe('INVALID_API_KEY'); // expired, asked again
      });
    } finally {
      await auth.stop();
    }
  });

  test('without a cache, every check asks the database', async ({ database, sql, owner, quest }) => {
    const auth = QuestAuthorizer.uncached(sql);
    expect(await codeOf(auth.authorize(owner.apiKey, quest))).toBe('OK');
    await withoutNotifications(database.sql, async () => {
      await revokeApiKey(database.sql, owner.apiKey);
      expect(await codeOf(auth.authorize(owner.apiKey, quest))).toBe('INVALID_API_KEY');
    });
  });
});
