import { findApiKeyWithQuest, type Sql } from '@quest/db';
import { DomainError, hashApiKey, isWellFormedApiKey } from '@quest/domain';

export interface QuestOwnerAuthorization {
  ownerId: string;
  quest: { id: number; ownerId: string };
}

export const AUTH_CHANGED_CHANNEL = 'quest_auth_changed';

interface AuthLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * Checks that an API key belongs to the owner of a quest, in this order: a missing, malformed,
 * unknown or revoked key is INVALID_API_KEY (401) whatever the quest; then an unknown quest is
 * QUEST_NOT_FOUND (404); then another owner's quest is NOT_QUEST_OWNER (401).
 *
 * With a TTL above zero, positive answers are cached in memory (key hash → owner, quest → owner),
 * so the hot path of an allocation makes no authorization query. The cache is emptied whenever
 * PostgreSQL notifies `quest_auth_changed` (a trigger fires it on any revocation or deletion of a
 * key, and on a quest deleted or moved to another owner, however it is made) and whenever the
 * listening connection (re)connects, since notifications may have been missed meanwhile; the TTL
 * bounds staleness should both fail. Unknown keys and quests are never cached.
 */
export class QuestAuthorizer {
  readonly #keys = new Map<string, { ownerId: string; expires: number }>();
  readonly #quests = new Map<number, { ownerId: string; expires: number }>();
  #unlisten: (() => Promise<void>) | undefined;

  private constructor(
    private readonly sql: Sql,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** No cache: one query per check (tests that build the app without a server use this). */
  static uncached(sql: Sql): QuestAuthorizer {
    return new QuestAuthorizer(sql, 0);
  }

  /**
   * `now` is the clock the TTL is measured on, in milliseconds (Date.now unless given; tests pass
   * a clock of their own to expire entries without waiting).
   */
  static async start(sql: Sql, opts: { ttlMs: number; logger: AuthLogger; now?: () => number }): Promise<QuestAuthorizer> {
    const auth = new QuestAuthorizer(sql, opts.ttlMs, opts.now);
    if (opts.ttlMs > 0) {
      const { unlisten } = await sql.listen(
        AUTH_CHANGED_CHANNEL,
        (table) => {
          auth.clear();
          opts.logger.info({ table }, 'authorization cache cleared');
        },
        () => auth.clear(),
      );
      auth.#unlisten = unlisten;
    }
    return auth;
  }

  clear(): void {
    this.#keys.clear();
    this.#quests.clear();
  }

  async stop(): Promise<void> {
    await this.#unlisten?.().catch(() => {});
  }

  /** The owner of an API key, for routes about the owner's own resources (events, webhook endpoints). */
  async authenticate(apiKey: string | undefined): Promise<{ ownerId: string }> {
    if (!isWellFormedApiKey(apiKey)) throw new DomainError('INVALID_API_KEY');
    const hash = hashApiKey(apiKey);
    const cacheKey = hash.toString('base64');
    const now = this.now();
    const key = this.#keys.get(cacheKey);
    if (key && key.expires > now) return { ownerId: key.ownerId };
    // Quest 0 never exists: the lookup answers for the key alone.
    const row = await findApiKeyWithQuest(this.sql, hash, 0);
    if (!row || row.revokedAt !== null) throw new DomainError('INVALID_API_KEY');
    if (this.ttlMs > 0) this.#keys.set(cacheKey, { ownerId: row.ownerId, expires: now + this.ttlMs });
    return { ownerId: row.ownerId };
  }

  async authorize(apiKey: string | undefined, questId: number): Promise<QuestOwnerAuthorization> {
    if (!isWellFormedApiKey(apiKey)) throw new DomainError('INVALID_API_KEY');
    const hash = hashApiKey(apiKey);
    const cacheKey = hash.toString('base64');
    const now = this.now();
    const key = this.#keys.get(cacheKey);
    const quest = this.#quests.get(questId);
    let ownerId: string;
    let questOwnerId: string;
    if (key && key.expires > now && quest && quest.expires > now) {
      ownerId = key.ownerId;
      questOwnerId = quest.ownerId;
    } else {
      const row = await findApiKeyWithQuest(this.sql, hash, questId);
      if (!row || row.revokedAt !== null) throw new DomainError('INVALID_API_KEY');
      if (row.questId === null || row.questOwnerId === null) throw new DomainError('QUEST_NOT_FOUND');
      ownerId = row.ownerId;
      questOwnerId = row.questOwnerId;
      if (this.ttlMs > 0) {
        this.#keys.set(cacheKey, { ownerId, expires: now + this.ttlMs });
        this.#quests.set(questId, { ownerId: questOwnerId, expires: now + this.ttlMs });
      }
    }
    if (questOwnerId !== ownerId) throw new DomainError('NOT_QUEST_OWNER');
    return { ownerId, quest: { id: questId, ownerId: questOwnerId } };
  }
}

/** The x-api-key header as a single string; repeated headers count as no key. */
export function apiKeyHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['x-api-key'];
  return typeof value === 'string' ? value : undefined;
}
