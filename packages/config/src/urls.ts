/**
 * Rebuilding a PostgreSQL or Redis URL — another database, another host and port — keeps every
 * other part as written: credentials (still percent-encoded), the database name or Redis index,
 * the options after `?`. Done on the string rather than with WHATWG `URL`, which refuses
 * PostgreSQL's multi-host form (`postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write`)
 * and re-encodes what it does not need to touch.
 */

export interface UrlParts {
  /** `postgres:`, `redis:`, `rediss:`, … */
  scheme: string;
  /** `user:password` as written (percent-encoded), or '' when absent. */
  userinfo: string;
  /** `host:port` or `h1:p1,h2:p2` as written; may be '' (`postgres:///db?host=/socket`). */
  hosts: string;
  /** From the first `/` after the hosts up to `?`: `/quest_rewards`, `/7`, or ''. */
  path: string;
  /** From `?` on, including it, or ''. */
  query: string;
}

/** The parts of `scheme://[userinfo@]hosts[/path][?query]`. Throws on anything else. */
export function splitUrl(url: string): UrlParts {
  const m = /^([a-z][a-z0-9+.-]*:)\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(url.trim());
  if (!m) throw new Error('not a scheme://host URL');
  const authority = m[2]!;
  const at = authority.lastIndexOf('@');
  return {
    scheme: m[1]!.toLowerCase(),
    userinfo: at >= 0 ? authority.slice(0, at) : '',
    hosts: at >= 0 ? authority.slice(at + 1) : authority,
    path: m[3]!,
    query: m[4] ?? '',
  };
}

export function joinUrl(p: UrlParts): string {
  return `${p.scheme}//${p.userinfo ? `${p.userinfo}@` : ''}${p.hosts}${p.path}${p.query}`;
}

/** `url` (a PostgreSQL URL) naming database `name` instead; credentials, hosts and options kept. */
export function withDatabase(url: string, name: string): string {
  return joinUrl({ ...splitUrl(url), path: `/${encodeURIComponent(name)}` });
}

/** The database a PostgreSQL URL names (decoded), or '' when it names none. */
export function databaseName(url: string): string {
  return decodeURIComponent(splitUrl(url).path.replace(/^\//, ''));
}

/**
 * `url` pointed at `host:port` (a proxy, a private server on a free port) instead of its own hosts;
 * credentials, the database name or Redis index, and the options kept.
 */
export function withAddress(url: string, host: string, port: number): string {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return joinUrl({ ...splitUrl(url), hosts: `${bracketed}:${port}` });
}

/** The first host and port of a URL (IPv6 brackets removed), `defaultPort` when it names none. */
export function firstAddress(url: string, defaultPort: number): { host: string; port: number } {
  const first = splitUrl(url).hosts.split(',')[0] ?? '';
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(first);
  return { host: (m?.[1] ?? '').replace(/^\[|\]$/g, '') || '127.0.0.1', port: m?.[2] ? Number(m[2]) : defaultPort };
}

/** Where a URL points, for messages and logs: hosts and path, never the credentials or options. */
export function describeUrl(url: string, fallback: string): string {
  try {
    const { hosts, path } = splitUrl(url);
    return `${hosts || 'localhost'}${path}`;
  } catch {
    return fallback;
  }
}
