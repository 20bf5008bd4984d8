import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  type ConsoleSessionRow,
  deleteConsoleSession,
  findApiKeyByHash,
  findConsoleSession,
  insertConsoleSession,
  type Sql,
} from '@quest/db';
import { hashApiKey, isWellFormedApiKey } from '@quest/domain';

/**
 * Console sessions, kept in PostgreSQL (table console_sessions). Chosen over a cookie signed with a
 * server secret because a session must end the moment its key is revoked, by whatever means (the
 * console, quest-admin, plain SQL): a signed cookie stays valid until it expires unless every
 * request looks the key up anyway, and then the table costs nothing more. It also needs no new
 * secret to configure and rotate, lets sign-out end a session for good, and works across API
 * processes. The browser holds only a random 256-bit token (HttpOnly cookie); the table holds its
 * SHA-256. The API key the owner typed is used once, to find the key's row, and never stored.
 */

export const SESSION_COOKIE = 'quest_console';
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export type ConsoleSession = ConsoleSessionRow & { tokenHash: Buffer };

export class ConsoleSessions {
  readonly #adminDigest: Buffer | undefined;

  constructor(
    private readonly sql: Sql,
    adminToken: string | undefined,
    private readonly ttlMs = SESSION_TTL_MS,
  ) {
    this.#adminDigest = adminToken ? sha256(adminToken) : undefined;
  }

  /**
   * Open a session for an owner's API key (`sk_…`, not revoked) or the operator token; undefined
   * for anything else, whatever the reason (unknown, revoked, malformed), so an answer never tells
   * whether a key exists.
   */
  async signIn(secret: string): Promise<{ token: string; expiresAt: Date; kind: 'owner' | 'operator' } | undefined> {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + this.ttlMs);
    const tokenHash = sha256(token);
    if (isWellFormedApiKey(secret)) {
      const key = await findApiKeyByHash(this.sql, hashApiKey(secret));
      if (!key || key.revokedAt !== null) return undefined;
      await insertConsoleSession(this.sql, { tokenHash, csrfToken, expiresAt, keyId: key.id });
      return { token, expiresAt, kind: 'owner' };
    }
    if (this.#adminDigest && timingSafeEqual(sha256(secret), this.#adminDigest)) {
      await insertConsoleSession(this.sql, { tokenHash, csrfToken, expiresAt, adminTokenHash: this.#adminDigest });
      return { token, expiresAt, kind: 'operator' };
    }
    return undefined;
  }

  /** The live session of a cookie's token; an operator's ends when ADMIN_TOKEN changes (or is unset). */
  async find(token: string | undefined): Promise<ConsoleSession | undefined> {
    if (!token || token.length > 100) return undefined;
    const tokenHash = sha256(token);
    const row = await findConsoleSession(this.sql, tokenHash);
    if (!row) return undefined;
    if (row.kind === 'operator') {
      const digest = this.#adminDigest;
      if (!digest || row.adminTokenHash.length !== digest.length || !timingSafeEqual(row.adminTokenHash, digest))
        return undefined;
    }
    return { ...row, tokenHash };
  }

  async end(session: ConsoleSession): Promise<void> {
    await deleteConsoleSession(this.sql, session.tokenHash);
  }
}

/** Constant-time comparison of a presented CSRF token with the session's. */
export function csrfMatches(presented: unknown, expected: string): boolean {
  if (typeof presented !== 'string' || presented.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(presented), Buffer.from(expected));
}
