import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { blockedAddressReason, checkWebhookUrl } from '@quest/domain';
import { Agent, request } from 'undici';

/**
 * One webhook POST, safe to point at the internet: the address is checked where it is known — in
 * the DNS lookup the socket itself uses to connect, so a name that resolves to a public address
 * when checked and a private one when connecting (DNS rebinding) cannot get through — no redirect
 * is followed (a 3xx is a failed attempt), the whole exchange is bounded by a timeout, and at most
 * `maxBodyBytes` of the answer are read.
 *
 * Sent with undici rather than `node:http`: through this function, a keep-alive POST to a local
 * receiver with 50 in flight cost 53–63 µs of client CPU against 83–98 µs (docs/performance.md),
 * and the POST is the largest part of what the worker spends on a delivery. undici follows no
 * redirect unless told to, and hands its `connect` options to `net.connect` / `tls.connect`, so
 * the guarded lookup runs at connect time exactly as before.
 */

export interface SendOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Answer bytes read at most; the rest is dropped with the connection. */
  maxBodyBytes: number;
  /** The resolver under the address check (dns.lookup; tests give one that answers what they need). */
  resolve?: typeof dnsLookup;
}

export interface SendResult {
  /** HTTP status, or null when no answer came (refused, timed out, blocked). */
  status: number | null;
  /** The start of the answer's body (up to maxBodyBytes), as text. */
  body: string;
  error: string | null;
  latencyMs: number;
}

export class BlockedAddress extends Error {
  override readonly name = 'BlockedAddress';
  readonly code = 'EBLOCKED';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A dns.lookup that refuses, at connect time, any resolved address that is not public. */
const guardedLookup = (resolve: typeof dnsLookup) => (hostname: string, options: LookupOptions, callback: LookupCallback) => {
  resolve(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    for (const a of addresses) {
      const reason = blockedAddressReason(a.address);
      if (reason) return callback(new BlockedAddress(`${hostname} resolves to ${reason}`), '');
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    callback(null, first.address, first.family);
  });
};

/** Connections kept alive per origin, and how many at once. */
const AGENT_OPTIONS = { keepAliveTimeout: 30_000, connections: 64 } as const;

/**
 * One agent per resolver, policy and timeout: its lookup is part of how it connects, and undici
 * acts on an abort only once connected, so the connection itself (lookup, TCP, TLS) is bounded by
 * the agent's connect timeout — the whole exchange's, so a slow handshake cannot outlast it.
 */
const agents = new Map<string, Agent>();
const resolverIds = new Map<typeof dnsLookup, number>();
function agentFor(opts: SendOptions): Agent {
  const resolve = opts.resolve ?? dnsLookup;
  let resolverId = resolverIds.get(resolve);
  if (resolverId === undefined) resolverIds.set(resolve, (resolverId = resolverIds.size));
  const key = `${resolverId}:${opts.allowPrivate}:${opts.timeoutMs}`;
  let agent = agents.get(key);
  if (!agent) {
    const lookup = opts.allowPrivate ? resolve : guardedLookup(resolve);
    agent = new Agent({ ...AGENT_OPTIONS, connect: { lookup: lookup as never, timeout: opts.timeoutMs } });
    agents.set(key, agent);
  }
  return agent;
}

/** The BlockedAddress behind an error, however deep the client wrapped it. */
function blockedCause(err: unknown): BlockedAddress | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof BlockedAddress) return e;
  }
  return undefined;
}

export async function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, 'latencyMs'>): SendResult => ({ ...r, latencyMs: Math.round(performance.now() - started) });
  const check = checkWebhookUrl(url, { allowPrivate: opts.allowPrivate });
  if (!check.ok) return done({ status: null, body: '', error: `URL not allowed: ${check.reason}` });
  const target = check.url;
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // An IP literal is connected to without a lookup: check it here.
  if (!opts.allowPrivate && isIP(host)) {
    const reason = blockedAddressReason(host);
    if (reason) return done({ status: null, body: '', error: `blocked: ${reason}` });
  }
  // The whole exchange, answer included, within the timeout: the abort stops a request that is
  // sending or reading, the race settles one still waiting for a connection of the pool.
  const abort = new AbortController();
  const timeout = new Error(`timed out after ${opts.timeoutMs} ms`);
  const expired = new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(timeout)));
  const timer = setTimeout(() => abort.abort(timeout), opts.timeoutMs);
  let status: number | null = null;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    const sent = request(target, {
      method: 'POST',
      dispatcher: agentFor(opts),
      headers: { ...headers, 'content-type': 'application/json' },
      body,
      signal: abort.signal,
    });
    sent.catch(() => {}); // a request that lost the race fails on its own later
    const response = await Promise.race([sent, expired]);
    status = response.statusCode;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (size < opts.maxBodyBytes) chunks.push(chunk.subarray(0, opts.maxBodyBytes - size));
      size += chunk.length;
      if (size >= opts.maxBodyBytes) {
        // Enough: the rest is not read (the connection is not reused).
        response.body.destroy();
        break;
      }
    }
    return done({ status, body: Buffer.concat(chunks).toString('utf8'), error: null });
  } catch (err) {
    const blocked = blockedCause(err);
    const error = abort.signal.aborted
      ? timeout.message
      : blocked
        ? `blocked: ${blocked.message}`
        : (err as Error).message || (err as NodeJS.ErrnoException).code || 'error';
    return done({ status, body: Buffer.concat(chunks).toString('utf8'), error });
  } finally {
    clearTimeout(timer);
  }
}
