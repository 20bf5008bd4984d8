import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * `TRUST_PROXY`: which proxies' `X-Forwarded-*` headers to believe. Believing every hop (`true`)
 * lets a client behind a proxy that appends to `X-Forwarded-For` choose its own address; naming the
 * proxies (addresses, CIDR ranges, proxy-addr's range names) does not: the client address is the
 * last one not among them. A hop count is refused: it cannot tell the proxy from a client that
 * connects directly and writes the header itself, which is why Fastify 5.12.1 stopped honouring
 * one (a number there now trusts nothing).
 */
export type TrustProxy = boolean | string[];

/** proxy-addr's names for the reserved ranges (127.0.0.1/8 and ::1, 169.254/16 and fe80::/10, private ranges and fc00::/7). */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** The boolean words of boolVar, but for `1`, which reads as a hop count. */
const BOOLEANS: Record<string, boolean> = { true: true, yes: true, on: true, false: false, '0': false, no: false, off: false };

/** One list entry: an address, an address/prefix, or a range name; null when it is none of these. */
function proxyEntry(text: string): string | null {
  if (RANGE_NAMES.has(text)) return text;
  const [address = '', prefix, ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return null;
  if (prefix === undefined) return address;
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
  return bits <= (family === 4 ? 32 : 128) ? `${address}/${bits}` : null;
}

/** The TRUST_PROXY value as Fastify takes it, or a sentence saying why it is not one. */
export function parseTrustProxy(text: string): { ok: true; value: TrustProxy } | { ok: false; reason: string } {
  const value = text.trim();
  const word = BOOLEANS[value.toLowerCase()];
  if (word !== undefined) return { ok: true, value: word };
  if (/^\d+$/.test(value))
    return {
      ok: false,
      reason:
        "a hop count cannot tell a proxy from a client that sets the header itself: name the proxies' addresses or ranges (e.g. 10.0.0.5 or 10.0.0.0/8), or true behind a proxy that overwrites X-Forwarded-For",
    };
  const entries = value.split(',').map((e) => e.trim());
  const parsed = entries.map(proxyEntry);
  const bad = entries.find((_, i) => parsed[i] === null);
  if (bad !== undefined)
    return { ok: false, reason: `${JSON.stringify(bad)} is not an IP address, a CIDR range, loopback, linklocal or uniquelocal` };
  return { ok: true, value: parsed as string[] };
}

export const trustProxyVar = () =>
  z
    .string()
    .optional()
    .transform((text, ctx): TrustProxy => {
      if (text === undefined || text.trim() === '') return false;
      const parsed = parseTrustProxy(text);
      if (parsed.ok) return parsed.value;
      ctx.issues.push({ code: 'custom', message: parsed.reason, input: text });
      return z.NEVER;
    })
    .meta({
      defaultText: '`false`',
      boundsText:
        '`false` (also `0`, `no`, `off`), `true` (also `yes`, `on`), or a comma-separated list of proxy addresses and CIDR ranges (also `loopback`, `linklocal`, `uniquelocal`); not a hop count',
    });
