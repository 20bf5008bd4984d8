import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/**
 * Webhook rules with no I/O: which URLs and addresses an endpoint may use, the retry schedule,
 * and the signing secret's format and encryption at rest.
 */

export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** Where global unicast IPv6 addresses are allocated from; the rest of the space is reserved. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/**
 * Why an address may not be connected to, or null when it may: only global unicast addresses
 * (no loopback, private, link-local — which holds the cloud metadata address 169.254.169.254 —,
 * unique-local, carrier-grade NAT, multicast, reserved, unspecified). IPv4-mapped IPv6 addresses
 * are judged as the IPv4 address they carry. IPv4-compatible ones (`::a.b.c.d`, the rest of ::/96,
 * deprecated by RFC 4291 §2.5.5.1) are refused whatever they carry: stacks that still translate
 * them would reach the IPv4 address, and no public service is reached that way. Any other IPv6
 * address outside 2000::/3 is reserved.
 */
export function blockedAddressReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return `not an IP address: ${address}`;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    else if (v6.parts.slice(0, 6).every((part) => part === 0) && v6.range() === 'unicast')
      return `${address} is an IPv4-compatible address`;
    else if (v6.range() === 'unicast' && !v6.match(GLOBAL_UNICAST_V6)) return `${address} is a reserved address`;
  }
  const range = parsed.range();
  return range === 'unicast' ? null : `${address} is a ${range} address`;
}

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * Whether an endpoint URL may be registered: https (http too when private URLs are allowed), no
 * credentials, and — unless private URLs are allowed — no host that is a non-public IP literal or
 * `localhost`. A name that resolves to a private address is refused at connect time, where the
 * resolved address is known (checking it here would not survive DNS rebinding).
 */
export function checkWebhookUrl(raw: string, opts: { allowPrivate: boolean }): WebhookUrlCheck {
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) return { ok: false, reason: `longer than ${WEBHOOK_URL_MAX_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(opts.allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: opts.allowPrivate ? 'must be http:// or https://' : 'must be https://' };
  }
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials' };
  if (url.hash) return { ok: false, reason: 'must not carry a fragment' };
  if (!opts.allowPrivate) {
    // A name may end with the root's dot (`localhost.` is localhost).
    const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (host === 'localhost' || host.endsWith('.localhost')) return { ok: false, reason: 'must not point at localhost' };
    if (ipaddr.isValid(host)) {
      const reason = blockedAddressReason(host);
      if (reason) return { ok: false, reason };
    }
  }
  return { ok: true, url };
}

export interface RetrySchedule {
  /** Pause after the first failed attempt; it doubles with each further failure. */
  baseMs: number;
  /** Longest pause between two attempts. */
  maxMs: number;
  /** Attempts stop once the first one is this old: the delivery is failed and its endpoint failing. */
  windowMs: number;
}

/** The retry schedule by default: 10 s doubling to 6 h, for 3 days (about 20 attempts). */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = { baseMs: 10_000, maxMs: 6 * 3_600_000, windowMs: 3 * 86_400_000 };

/**
 * The pause after `failures` failed attempts (1 after the first): exponential, capped, with "equal
 * jitter" (half fixed, half random) so endpoints that failed together do not retry together.
 * `random` in [0, 1).
 */
export function retryDelayMs(failures: number, schedule: RetrySchedule, random: number): number {
  const exp = Math.min(schedule.maxMs, schedule.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(exp / 2 + (random * exp) / 2);
}

/** Whether a delivery whose first attempt was at `firstAttemptAt` may be tried again at `now`. */
export const withinRetryWindow = (firstAttemptAt: Date, now: Date, schedule: RetrySchedule) =>
  now.getTime() - firstAttemptAt.getTime() < schedule.windowMs;

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const FORMAT_V1 = 1;

/**
 * Encrypt a signing secret with AES-256-GCM: version byte, 12-byte nonce, 16-byte tag, ciphertext.
 * `context` (the endpoint id) is authenticated with it, so a ciphertext copied onto another row
 * does not decrypt there.
 */
export function encryptSecret(secret: string, key: Buffer, context: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([FORMAT_V1]), iv, cipher.getAuthTag(), body]);
}

/** Decrypt what encryptSecret made; throws when the key, the context or the bytes are wrong. */
export function decryptSecret(stored: Uint8Array, key: Buffer, context: string): string {
  const buf = Buffer.from(stored);
  if (buf[0] !== FORMAT_V1 || buf.length < 29) throw new Error('unknown secret format');
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(1, 13));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(buf.subarray(13, 29));
  return Buffer.concat([decipher.update(buf.subarray(29)), decipher.final()]).toString('utf8');
}
