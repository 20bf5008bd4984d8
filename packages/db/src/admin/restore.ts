import type { Sql } from '../client.ts';

/**
 * The operator's reads for a database restored from a backup (`quest-admin restore`): where the
 * ledger stops, and which requests Redis still knows of that the ledger has no trace of. Read-only:
 * a restore changes nothing in the ledger; the reconciler re-drives what the database itself says
 * is pending.
 */

export interface RecoveryPoint {
  /** The timeline the server runs on: 1 on a database never restored to a point, +1 per recovery that ended. */
  timeline: number;
  /**
   * Where the last recovery stopped, from its timeline history file (`before 2026-12-02 04:50:01+00`,
   * `no recovery target specified` for the end of the archive); null on timeline 1, or when the
   * role may not read server files.
   */
  recoveryTarget: string | null;
  /** The latest decision the ledger holds (payout, rejection, reversal or event), or null on an empty ledger. */
  lastDecisionAt: Date | null;
  inRecovery: boolean;
  counts: { payouts: number; pendingRequests: number; unfinishedBatches: number };
}

export async function recoveryPoint(sql: Sql): Promise<RecoveryPoint> {
  const [row] = await sql<
    { timeline: number; in_recovery: boolean; last_decision_at: Date | null; payouts: string; pending: string; batches: string }[]
  >`
    select ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int as timeline,
           pg_is_in_recovery() as in_recovery,
           greatest((select max(created_at) from payouts), (select max(created_at) from allocation_rejections),
                    (select max(created_at) from reversals), (select max(created_at) from events)) as last_decision_at,
           (select count(*) from payouts) as payouts,
           (select count(*) from allocation_requests where status = 'pending') as pending,
           (select count(*) from batches where status in ('pending', 'processing')) as batches`;
  return {
    timeline: row!.timeline,
    recoveryTarget: row!.timeline > 1 ? await historyTarget(sql, row!.timeline) : null,
    lastDecisionAt: row!.last_decision_at,
    inRecovery: row!.in_recovery,
    counts: { payouts: Number(row!.payouts), pendingRequests: Number(row!.pending), unfinishedBatches: Number(row!.batches) },
  };
}

/** The reason column of the history file's last line: how the recovery that started `timeline` ended. */
async function historyTarget(sql: Sql, timeline: number): Promise<string | null> {
  const file = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
  try {
    const [row] = await sql<{ text: string | null }[]>`select pg_read_file(${file}, 0, 1000000, true) as text`;
    const last = row?.text?.trim().split('\n').at(-1);
    return last?.split('\t')[2]?.trim() ?? null;
  } catch {
    return null;
  }
}

export interface RequestRef {
  questId: number;
  key: string;
}

/**
 * Of `refs`, those the ledger has no trace of: no payout, rejection, reversal, refused reversal or
 * status marker. A request Redis remembers (a job, an Idempotency-Key's claim) that is not here was
 * accepted or decided after the recovery point: the restore rewound it.
 */
export async function unaccountedRequests(sql: Sql, refs: readonly RequestRef[]): Promise<RequestRef[]> {
  if (refs.length === 0) return [];
  const rows = await sql<{ quest_id: number; request_key: string }[]>`
    select v.quest_id, v.request_key
    from unnest(${refs.map((r) => r.questId)}::int[], ${refs.map((r) => r.key)}::text[]) as v(quest_id, request_key)
    where not exists (select 1 from payouts p where p.quest_id = v.quest_id and p.request_key = v.request_key)
      and not exists (select 1 from allocation_rejections j where j.quest_id = v.quest_id and j.request_key = v.request_key)
      and not exists (select 1 from reversals x where x.id = v.request_key)
      and not exists (select 1 from reversal_rejections y where y.id = v.request_key)
      and not exists (select 1 from allocation_requests r where r.quest_id = v.quest_id and r.request_key = v.request_key)
    order by v.quest_id, v.request_key`;
  return rows.map((r) => ({ questId: r.quest_id, key: r.request_key }));
}

/** Of `batchIds`, those with no row: batches accepted after the recovery point. */
export async function unaccountedBatches(sql: Sql, batchIds: readonly string[]): Promise<string[]> {
  if (batchIds.length === 0) return [];
  const rows = await sql<{ id: string }[]>`
    select v.id from unnest(${[...batchIds]}::text[]) as v(id)
    where not exists (select 1 from batches b where b.id = v.id) order by v.id`;
  return rows.map((r) => r.id);
}

/**
 * Of request keys known without their quest (Idempotency-Key claims: `alc_k…`, `rev_k…`, `bat_k…`),
 * those the ledger has no trace of. Each is looked up under every quest (by the unique indexes).
 */
export async function unaccountedKeys(sql: Sql, keys: readonly string[]): Promise<string[]> {
  if (keys.length === 0) return [];
  const rows = await sql<{ key: string }[]>`
    select v.key from unnest(${[...keys]}::text[]) as v(key)
    where not exists (select 1 from batches b where b.id = v.key)
      and not exists (select 1 from reversals x where x.id = v.key)
      and not exists (select 1 from reversal_rejections y where y.id = v.key)
      and not exists (select 1 from quests q where
            exists (select 1 from payouts p where p.quest_id = q.id and p.request_key = v.key and p.batch_id is null)
         or exists (select 1 from allocation_rejections j where j.quest_id = q.id and j.request_key = v.key)
         or exists (select 1 from allocation_requests r where r.quest_id = q.id and r.request_key = v.key))
    order by v.key`;
  return rows.map((r) => r.key);
}
