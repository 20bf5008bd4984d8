/**
 * A scripted stand-in for the API, given to the client as its `fetch`: each request gets the next
 * answer of the script. For unit tests of the client's own logic (retries, following, batching);
 * the system tests run it against the real service.
 */

export type Reply = Response | Error | ((request: Request, body: string) => Response | Error | Promise<Response | Error>);

export interface Seen {
  method: string;
  url: string;
  path: string;
  headers: Headers;
  body: string;
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

export function envelope(status: number, code: string, message = code, headers: Record<string, string> = {}, details?: unknown) {
  return json(
    status,
    { statusCode: status, error: 'Error', code, message, requestId: 'req-1', ...(details ? { details } : {}) },
    headers,
  );
}

export const networkError = () => Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });

export function scriptedFetch(script: Reply[]) {
  const seen: Seen[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const body = await request.clone().text();
    const url = new URL(request.url);
    seen.push({ method: request.method, url: request.url, path: url.pathname + url.search, headers: request.headers, body });
    const next = script.shift();
    if (next === undefined) return json(500, { code: 'SCRIPT_EXHAUSTED', message: 'no more answers' });
    const answer = typeof next === 'function' ? await next(request, body) : next;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { fetch, seen, left: () => script.length };
}

/** A retry policy that waits (almost) nothing, so tests run at CPU speed. */
export const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 2 };

export const A = `0x${'ab'.repeat(20)}`;
export const B = `0x${'CD'.repeat(20)}`;

export const payout = (id = 'pay_1', amount = 5) => ({
  id,
  amount,
  created_at: '2026-03-01T12:00:00.123Z',
  account: { pass: A },
});
