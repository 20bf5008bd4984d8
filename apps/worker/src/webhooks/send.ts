import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { blockedAddressReason, checkWebhookUrl } from '@quest/domain';

/**
 * One webhook POST, safe to point at the internet: the address is checked where it is known — in
 * the DNS lookup the socket itself uses to connect, so a name that resolves to a public address
 * when checked and a private one when connecting (DNS rebinding) cannot get through — no redirect
 * is followed (a 3xx is a failed attempt), the whole exchange is bounded by a timeout, and at most
 * `maxBodyBytes` of the answer are read.
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

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

export function sendWebhook(url: string, headers: Record<string, string>, body: string, opts: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, 'latencyMs'>): SendResult => ({ ...r, latencyMs: Math.round(performance.now() - started) });
  const check = checkWebhookUrl(url, { allowPrivate: opts.allowPrivate });
  if (!check.ok) return Promise.resolve(done({ status: null, body: '', error: `URL not allowed: ${check.reason}` }));
  const target = check.url;
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // An IP literal is connected to without a lookup: check it here.
  if (!opts.allowPrivate && isIP(host)) {
    const reason = blockedAddressReason(host);
    if (reason) return Promise.resolve(done({ status: null, body: '', error: `blocked: ${reason}` }));
  }
  const secure = target.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: Omit<SendResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const request = (secure ? https : http).request(
      target,
      {
        method: 'POST',
        agent: secure ? agents.https : agents.http,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        lookup: (opts.allowPrivate ? (opts.resolve ?? dnsLookup) : guardedLookup(opts.resolve ?? dnsLookup)) as never,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const status = response.statusCode ?? null;
        response.on('data', (chunk: Buffer) => {
          if (size < opts.maxBodyBytes) chunks.push(chunk.subarray(0, opts.maxBodyBytes - size));
          size += chunk.length;
          if (size >= opts.maxBodyBytes) {
            // Enough: the rest is not read (the connection is not reused).
            response.destroy();
            finish({ status, body: Buffer.concat(chunks).toString('utf8'), error: null });
          }
        });
        response.on('end', () => finish({ status, body: Buffer.concat(chunks).toString('utf8'), error: null }));
        response.on('error', (err) => finish({ status, body: Buffer.concat(chunks).toString('utf8'), error: err.message }));
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => {
      finish({
        status: null,
        body: '',
        error: err instanceof BlockedAddress ? `blocked: ${err.message}` : err.message || err.code || 'error',
      });
    });
    request.end(body);
  });
}
