import type { Sql } from '@quest/db';
import { partitionQueueName } from '@quest/queue';

/**
 * Correctness after every scenario: the ledger invariants over the whole database, nothing
 * doubled, and every acknowledged credit present exactly once (and nothing unacknowledged beyond
 * what was still in flight when the load stopped).
 */

export interface AuditResult {
  /**
   * Quests / accounts / payouts breaking total = remaining + Σ payouts − Σ reversals,
   * balance = Σ payouts − Σ reversals, Σ a payout's reversals ≤ its amount, or ≥ 0.
   */
  invariantViolations: number;
  /**
   * (quest_id, request_key) pairs with more than one payout, or with a payout and a rejection; reversal
   * ids (their request keys) with both a reversal and a rejection.
   */
  duplicateKeys: number;
  sample: unknown[];
}

export async function auditLedger(sql: Sql): Promise<AuditResult> {
  const violations = await sql<{ kind: string; id: string }[]>`
    with paid_q as (select quest_id, sum(amount) s from payouts group by 1),
    rev_q as (select quest_id, sum(amount) s from reversals group by 1),
    paid_a as (select account_id, sum(amount) s from payouts group by 1),
    rev_a as (select account_id, sum(amount) s from reversals group by 1),
    rev_p as (select payout_id, sum(amount) s from reversals group by 1)
    select 'quest' as kind, q.id::text as id from quests q
      left join paid_q p on p.quest_id = q.id left join rev_q r on r.quest_id = q.id
      where q.total_points <> q.points_remaining + coalesce(p.s, 0) - coalesce(r.s, 0)
         or q.points_remaining < 0 or q.total_points < 0 or q.points_remaining > q.total_points
    union all
    select 'account', a.id::text from accounts a
      left join paid_a p on p.account_id = a.id left join rev_a r on r.account_id = a.id
      where a.balance <> coalesce(p.s, 0) - coalesce(r.s, 0) or a.balance < 0
    union all
    select 'payout', p.id from payouts p left join rev_p r on r.payout_id = p.id
      where p.amount <= 0 or coalesce(r.s, 0) > p.amount
    limit 100`;
  const dups = await sql<{ quest_id: number; request_key: string; n: number }[]>`
    select quest_id, request_key, count(*)::int as n from (
      select quest_id, request_key from payouts
      union all
      select quest_id, request_key from allocation_rejections
      union all
      select quest_id, id from reversals
      union all
      select quest_id, id from reversal_rejections
    ) x group by 1, 2 having count(*) > 1 limit 100`;
  return { invariantViolations: violations.length, duplicateKeys: dups.length, sample: [...violations, ...dups].slice(0, 10) };
}

export interface CreditCheck {
  /** Payouts in the database for the scenario's quests. */
  payoutsInDb: number;
  /** Payout ids the client was given (200 responses, batch results). */
  acknowledged: number;
  /** Acknowledged ids missing from the database. */
  lost: number;
  /** Ids handed out twice (two requests told they got the same payout). */
  repeatedIds: number;
  /** Payouts in the database nobody was told about. */
  unacknowledged: number;
  /** How many unacknowledged payouts are explainable (requests cut off at the end of a timed run, 202s decided later). */
  unacknowledgedAllowed: number;
  rejections: number;
  ok: boolean;
}

/**
 * Compare the payout ids a run received with what the database holds for its quests. Exact: a
 * payout the client was told about must exist once; the database may hold at most
 * `allowedExtra` payouts the client never heard of (in-flight at stop, or answered 202).
 */
export async function checkCredits(
  sql: Sql,
  questIds: readonly number[],
  ids: readonly string[],
  allowedExtra: number,
): Promise<CreditCheck> {
  const rows = await sql<{ id: string }[]>`select id from payouts where quest_id = any(${questIds as number[]}::int[])`;
  const [{ n: rejections } = { n: 0 }] = await sql<{ n: number }[]>`
    select count(*)::int as n from allocation_rejections where quest_id = any(${questIds as number[]}::int[])`;
  const inDb = new Set(rows.map((r) => r.id));
  const seen = new Set<string>();
  let repeated = 0;
  let lost = 0;
  for (const id of ids) {
    if (seen.has(id)) {
      repeated++;
      continue;
    }
    seen.add(id);
    if (!inDb.has(id)) lost++;
  }
  const unacknowledged = inDb.size - (seen.size - lost);
  return {
    payoutsInDb: inDb.size,
    acknowledged: ids.length,
    lost,
    repeatedIds: repeated,
    unacknowledged,
    unacknowledgedAllowed: allowedExtra,
    rejections,
    ok: lost === 0 && repeated === 0 && unacknowledged <= allowedExtra && rejections === 0,
  };
}

/** Wait until no partition queue holds waiting, active, delayed or prioritized jobs (or time out). */
export async function waitForDrain(
  redis: import('ioredis').Redis,
  prefix: string,
  partitions: number,
  timeoutMs = 30_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // One pipeline per partition: a partition's keys share a slot, so this works on a cluster too.
    const counts = await Promise.all(
      Array.from({ length: partitions }, async (_, p) => {
        const q = `${prefix}:${partitionQueueName(p)}`;
        const res =
          (await redis
            .pipeline()
            .llen(`${q}:wait`)
            .llen(`${q}:active`)
            .zcard(`${q}:delayed`)
            .zcard(`${q}:prioritized`)
            .llen(`${q}:paused`)
            .exec()) ?? [];
        return res.reduce((s, [, v]) => s + Number(v ?? 0), 0);
      }),
    );
    const pending = counts.reduce((a, b) => a + b, 0);
    if (pending === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}
