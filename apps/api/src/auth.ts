import { findApiKeyWithQuest, type Sql } from '@quest/db';
import { DomainError, hashApiKey, isWellFormedApiKey } from '@quest/domain';

export interface QuestOwnerAuthorization {
  ownerId: string;
  quest: { id: number; ownerId: string };
}

/**
 * Check that the API key belongs to the owner of the quest, in this order: a missing, malformed,
 * unknown or revoked key is INVALID_API_KEY (401) whatever the quest; then an unknown quest is
 * QUEST_NOT_FOUND (404); then another owner's quest is NOT_QUEST_OWNER (401). One query.
 */
export async function authorizeQuestOwner(
  sql: Sql,
  apiKey: string | undefined,
  questId: number,
): Promise<QuestOwnerAuthorization> {
  if (!isWellFormedApiKey(apiKey)) throw new DomainError('INVALID_API_KEY');
  const row = await findApiKeyWithQuest(sql, hashApiKey(apiKey), questId);
  if (!row || row.revokedAt !== null) throw new DomainError('INVALID_API_KEY');
  if (row.questId === null || row.questOwnerId === null) throw new DomainError('QUEST_NOT_FOUND');
  if (row.questOwnerId !== row.ownerId) throw new DomainError('NOT_QUEST_OWNER');
  return { ownerId: row.ownerId, quest: { id: row.questId, ownerId: row.questOwnerId } };
}

/** The x-api-key header as a single string; repeated headers count as no key. */
export function apiKeyHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['x-api-key'];
  return typeof value === 'string' ? value : undefined;
}
