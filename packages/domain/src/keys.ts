import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'sk_';
const API_KEY_PATTERN = /^sk_[A-Za-z0-9_-]{16,128}$/;

/** A fresh API key: `sk_` + 32 random bytes in base64url. Shown once; only its hash is stored. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function isWellFormedApiKey(key: string | undefined): key is string {
  return typeof key === 'string' && API_KEY_PATTERN.test(key);
}

/** SHA-256 of the key. Keys carry 256 bits of entropy, so a fast unsalted hash is sufficient. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Short, non-secret prefix kept for display (`sk_AbCd…`). */
export function displayPrefix(key: string): string {
  return key.slice(0, 7);
}

/** Deterministic request key for an idempotent allocation, batch or reversal, scoped by owner and quest. */
export function idempotentRequestKey(
  ownerId: string,
  questId: number,
  idempotencyKey: string,
  kind: 'alc' | 'bat' | 'rev',
): string {
  const digest = createHash('sha256')
    .update(`${kind}\u0000${ownerId}\u0000${questId}\u0000${idempotencyKey}`)
    .digest('base64url');
  return `${kind}_k${digest.slice(0, 32)}`;
}

/** Whether a request key was derived from a client's Idempotency-Key (so a client may replay it). */
export function isIdempotentRequestKey(key: string): boolean {
  // Generated keys are `alc_`/`rev_` + a ULID, whose first character is 0–7; derived ones are `alc_k…`/`bat_k…`/`rev_k…`.
  return /^(alc|bat|rev)_k/.test(key);
}
