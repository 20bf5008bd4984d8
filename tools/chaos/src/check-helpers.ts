import type { Cluster } from './cluster.ts';

/** Add `t` to the list kept under `k`. */
export function push<K, T>(m: Map<K, T[]>, k: K, t: T) {
  const a = m.get(k);
  if (a) a.push(t);
  else m.set(k, [t]);
}

/**
 * GET a status route as a client does: a 5xx or a dropped connection (e.g. a pooled connection
 * PostgreSQL's restart closed) is retried, a few times; only an answer counts. Undefined: no
 * answer at all.
 */
export async function readAsClient(cluster: Cluster, path: string): Promise<Response | undefined> {
  let res: Response | undefined;
  for (let attempt = 1; attempt <= 5; attempt++) {
    res = await fetch(`${cluster.baseUrl}${path}`, {
      headers: { 'x-api-key': cluster.owner.apiKey },
      signal: AbortSignal.timeout(10_000),
    }).catch(() => undefined);
    if (res && res.status < 500) break;
    await res?.text().catch(() => {});
    await new Promise((r) => setTimeout(r, 200 * attempt));
  }
  return res;
}
