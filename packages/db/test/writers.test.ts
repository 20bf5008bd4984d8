import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@quest/testing/processes';

/**
 * One writer per table: every table the migrations create is written (INSERT, UPDATE, DELETE,
 * MERGE, TRUNCATE, COPY … FROM) by the SQL of exactly one source module, named here. A statement
 * that writes two tables is composed from statements the two writers build (a data-modifying CTE
 * takes a fragment the other module returns unsent), so each table's SQL still lives in one file.
 * The migrations create the tables and seed some rows; they are not counted. Found by reading the
 * sources, so a second writer fails this test whoever adds it.
 */
const WRITERS: Record<string, string> = {
  owners: 'packages/db/src/admin/owners.ts',
  api_keys: 'packages/db/src/admin/keys.ts',
  campaigns: 'packages/db/src/admin/catalog.ts',
  quests: 'packages/db/src/admin/catalog.ts',
  accounts: 'packages/db/src/admin/accounts.ts',
  feature_flags: 'packages/db/src/flags.ts',
  console_sessions: 'packages/db/src/console.ts',
  allocation_requests: 'packages/db/src/lifecycle.ts',
  batches: 'packages/db/src/lifecycle.ts',
  payouts: 'packages/db/src/ledger-write.ts',
  allocation_rejections: 'packages/db/src/ledger-write.ts',
  reversals: 'packages/db/src/ledger-write.ts',
  reversal_rejections: 'packages/db/src/ledger-write.ts',
  events: 'packages/db/src/outbox.ts',
  webhook_endpoints: 'packages/db/src/endpoints.ts',
  webhook_deliveries: 'packages/db/src/deliveries.ts',
};

/**
 * Columns whose writer is not their table's: the ledger alone moves a quest's budget and an
 * account's balance (it decides under the quest's lock), while the catalog and the account import
 * own the rows (a new quest's budget starts at its total, a new account's balance at 0). The
 * column's writer may only UPDATE these columns; the table's writer may never UPDATE them.
 */
const COLUMN_WRITERS: { table: string; columns: string[]; writer: string }[] = [
  { table: 'quests', columns: ['points_remaining'], writer: 'packages/db/src/ledger-write.ts' },
  { table: 'accounts', columns: ['balance'], writer: 'packages/db/src/ledger-write.ts' },
];

/**
 * Source trees that are not the service and write tables on purpose: the test fixtures seed the
 * databases tests run on; the tools (bench, chaos) seed private servers of their own, and the
 * bench runs a lean reference ledger against the service's (docs/performance.md). Nothing there
 * runs in the API, the worker or quest-admin.
 */
const FIXTURES = ['packages/testing/src/', 'tools/'];

/** The tables the migrations leave: created, less dropped, renames followed. */
function migratedTables(): string[] {
  const dir = join(REPO_ROOT, 'packages/db/migrations');
  const tables = new Set<string>();
  for (const migration of readdirSync(dir)
    .filter((d) => /^\d{5}_/.test(d))
    .sort()) {
    const text = stripSqlComments(readFileSync(join(dir, migration, 'index.sql'), 'utf8'));
    const statements = text.matchAll(
      /\b(?:create\s+table\s+(?:if\s+not\s+exists\s+)?(\w+)|drop\s+table\s+(?:if\s+exists\s+)?(\w+)|alter\s+table\s+(\w+)\s+rename\s+to\s+(\w+))/gi,
    );
    for (const [, created, dropped, renamedFrom, renamedTo] of statements) {
      if (created) tables.add(created.toLowerCase());
      if (dropped) tables.delete(dropped.toLowerCase());
      if (renamedFrom && renamedTo) {
        tables.delete(renamedFrom.toLowerCase());
        tables.add(renamedTo.toLowerCase());
      }
    }
  }
  return [...tables].sort();
}

const stripSqlComments = (sql: string) => sql.replace(/--[^\n]*/g, '');
/** JavaScript comments out (a comment may say "update accounts"); SQL inside template strings stays. */
const stripJsComments = (source: string) => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/[^\n]*/gm, '');

/** Every JavaScript or TypeScript source file of the apps, packages, tools and scripts, tests aside. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'dist', 'test', 'generated'].includes(entry.name) && !entry.name.startsWith('.')) walk(path);
      } else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !/\.test\.\w+$/.test(entry.name)) out.push(path);
    }
  };
  for (const tier of ['apps', 'packages', 'tools', 'scripts']) walk(join(REPO_ROOT, tier));
  return out;
}

interface Write {
  table: string;
  kind: string;
  /** For an UPDATE: the columns its SET clause assigns. */
  columns: string[];
}

const WRITE = /\b(insert\s+into|update|delete\s+from|merge\s+into|truncate(?:\s+table)?|copy)\s+(?:only\s+)?"?(\w+)"?/gi;

/** The table writes in a piece of source: each statement that writes a table, and what it sets. */
function writesIn(source: string): Write[] {
  const text = stripJsComments(source);
  const writes: Write[] = [];
  for (const match of text.matchAll(WRITE)) {
    const kind = match[1]!.toLowerCase().split(/\s+/)[0]!;
    const table = match[2]!.toLowerCase();
    if (kind === 'copy' && !/^\s*(\([^)]*\)\s*)?from\b/i.test(text.slice(match.index + match[0].length))) continue;
    let columns: string[] = [];
    if (kind === 'update') {
      const rest = text.slice(match.index + match[0].length);
      const set = /^\s*(?:as\s+)?(?:\w+\s+)?set\b([\s\S]*?)(?:\bfrom\b|\bwhere\b|\breturning\b|`|$)/i.exec(rest);
      if (!set) continue; // "update" followed by a table name but no SET: not a statement (e.g. "for update of")
      columns = [...` ,${set[1]}`.matchAll(/,\s*(\w+)\s*=/g)].map((m) => m[1]!.toLowerCase());
    }
    writes.push({ table, kind, columns });
  }
  return writes;
}

function writersByTable(): Map<string, Map<string, Write[]>> {
  const byTable = new Map<string, Map<string, Write[]>>();
  for (const file of sources()) {
    const path = relative(REPO_ROOT, file);
    if (FIXTURES.some((dir) => path.startsWith(dir))) continue;
    for (const write of writesIn(readFileSync(file, 'utf8'))) {
      const files = byTable.get(write.table) ?? new Map<string, Write[]>();
      files.set(path, [...(files.get(path) ?? []), write]);
      byTable.set(write.table, files);
    }
  }
  return byTable;
}

describe('one writer per table', () => {
  it('names the writer of every table the migrations create', () => {
    expect(Object.keys(WRITERS).sort()).toEqual(migratedTables());
  });

  it('each table is written by its one module, and a shared column only by its own writer', () => {
    const byTable = writersByTable();
    const found = Object.fromEntries(migratedTables().map((table) => [table, [...(byTable.get(table)?.keys() ?? [])].sort()]));
    const expected = Object.fromEntries(
      migratedTables().map((table) => [
        table,
        [WRITERS[table]!, ...COLUMN_WRITERS.filter((c) => c.table === table).map((c) => c.writer)].sort(),
      ]),
    );
    expect(found).toEqual(expected);
    for (const { table, columns, writer } of COLUMN_WRITERS) {
      const files = byTable.get(table)!;
      const own = files.get(writer)!;
      expect(
        own.every((w) => w.kind === 'update' && w.columns.every((c) => columns.includes(c))),
        `${writer} on ${table}`,
      ).toBe(true);
      const tableWriter = files.get(WRITERS[table]!)!;
      expect(
        tableWriter.flatMap((w) => w.columns).filter((c) => columns.includes(c)),
        `${WRITERS[table]} on ${table}`,
      ).toEqual([]);
    }
  });

  it('sees every kind of write, and the columns an UPDATE sets', () => {
    const source = [
      'await sql`insert into payouts (id) values (1)`;',
      'await tx`with moved as (update batches b set processed = 3, status = $1 where id = 1 returning 1) select 1`;',
      'await sql`DELETE FROM events where id < $1`;',
      'await sql`truncate table quests`;',
      'await sql`copy accounts (pass_address) from stdin`;',
      'await sql`select 1 from quests for no key update`; // update accounts in a comment',
      '/* delete from owners */ await sql`copy (select 1) to stdout`;',
      'await sql`insert into allocation_requests as r (a) values (1) on conflict (a) do update set status = excluded.status`;',
    ].join('\n');
    expect(writesIn(source)).toEqual([
      { table: 'payouts', kind: 'insert', columns: [] },
      { table: 'batches', kind: 'update', columns: ['processed', 'status'] },
      { table: 'events', kind: 'delete', columns: [] },
      { table: 'quests', kind: 'truncate', columns: [] },
      { table: 'accounts', kind: 'copy', columns: [] },
      { table: 'allocation_requests', kind: 'insert', columns: [] },
    ]);
  });
});
