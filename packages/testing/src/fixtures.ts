import { test as base } from 'vitest';
import { createTestDatabase, createTestRedis } from './servers.ts';
import { createAccounts, createOwner, createQuest, type QuestFields } from './seed.ts';
import { type SystemOptions, startSystem } from './system.ts';

/**
 * Vitest fixtures (`test.extend`) for integration and system tests. A test names what it needs and
 * gets a fresh one; nothing is shared between tests but the file's database and Redis prefix.
 *
 * - `database` (per file): a migrated PostgreSQL database of its own, dropped after the file.
 * - `redis` (per file): a Redis key prefix of its own, deleted after the file.
 * - `owner` (per test): a new quest owner with an API key.
 * - `quest` (per test): an active quest of `owner` with a budget of 1,000,000 points.
 * - `makeQuest` (per test): make more quests of `owner`, with fields of your own.
 * - `accounts` (per test): ten new accounts (EIP-55 addresses).
 *
 * `systemTest({ workers, partitions, env })` adds `system` (per file): the real API process and
 * that many worker processes on the file's database and prefix, stopped after the file.
 */
export const test = base
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
  .extend('database', { scope: 'file' }, async ({}, { onCleanup }) => {
    // A small pool: many test files share one PostgreSQL server's connection limit.
    const db = await createTestDatabase({ max: 4 });
    onCleanup(() => db.drop());
    return db;
  })
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
  .extend('redis', { scope: 'file' }, async ({}, { onCleanup }) => {
    const redis = await createTestRedis();
    onCleanup(() => redis.cleanup());
    return redis;
  })
  .extend('owner', async ({ database }) => createOwner(database.sql))
  .extend(
    'makeQuest',
    async ({ database, owner }) =>
      (fields: Partial<QuestFields> = {}) =>
        createQuest(database.sql, { ownerId: owner.id, totalPoints: 1_000_000, ...fields }),
  )
  .extend('quest', async ({ makeQuest }) => makeQuest())
  .extend('accounts', async ({ database }) => createAccounts(database.sql, 10));

/** `test` plus `system`: the real API and `options.workers` worker processes, per file. */
export function systemTest(options: Omit<SystemOptions, 'db' | 'redis'>) {
  return test.extend('system', { scope: 'file' }, async ({ database, redis }, { onCleanup }) => {
    const system = await startSystem({ ...options, db: database, redis });
    onCleanup(() => system.stop());
    return system;
  });
}
