/**
 * PostgreSQL URLs with one host or several (`postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`,
 * libpq's multi-host form, which postgres.js reads). WHATWG `URL` refuses a comma-separated host list,
 * so whatever needs the database name, a printable location or the same servers with another database
 * goes through here.
 */

export interface DatabaseLocation {
  hosts: { host: string; port: number }[];
  database: string;
  /** `host:port[,host:port…]/database`: for messages (never the credentials). */
  describe(): string;
  /** The same URL (hosts, credentials, parameters) naming another database. */
  withDatabase(name: string): string;
}

export function parseDatabaseUrl(url: string): DatabaseLocation {
  const scheme = /^(postgres(?:ql)?:\/\/)/.exec(url)?.[1];
  if (!scheme) throw new Error('not a postgres:// or postgresql:// URL');
  const rest = url.slice(scheme.length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const tail = end < 0 ? '' : rest.slice(end);
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at + 1);
  const hostList = at < 0 ? authority : authority.slice(at + 1);
  // One host parsed by URL with the tail: the path and query of a multi-host URL are ordinary.
  const single = new URL(`${scheme}${userinfo}${hostList.split(',')[0] || 'localhost'}${tail}`);
  const hosts = hostList
    .split(',')
    .filter(Boolean)
    .map((h) => {
      const m = /^(\[[^\]]+\]|[^:]*)(?::(\d+))?$/.exec(h);
      return { host: decodeURIComponent(m?.[1] || 'localhost'), port: Number(m?.[2] ?? 5432) };
    });
  const database = decodeURIComponent(single.pathname.replace(/^\//, ''));
  return {
    hosts: hosts.length ? hosts : [{ host: 'localhost', port: 5432 }],
    database,
    describe: () =>
      `${(hosts.length ? hosts : [{ host: 'localhost', port: 5432 }]).map((h) => `${h.host}:${h.port}`).join(',')}/${database}`,
    withDatabase: (name) => {
      const q = tail.search(/[?#]/);
      return `${scheme}${userinfo}${hostList}/${encodeURIComponent(name)}${q < 0 ? '' : tail.slice(q)}`;
    },
  };
}
