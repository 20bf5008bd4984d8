import type { Sql } from '../client.ts';

/**
 * The ledger audit (`quest-admin audit`): the ledger invariants, checked set-based (one grouped
 * pass over payouts and one over reversals per check):
 *
 * - per quest: total_points = points_remaining + Σ payouts − Σ reversals, nothing negative,
 *   points_remaining ≤ total_points;
 * - per account: balance = Σ payouts − Σ reversals, never below zero;
 * - per payout: amount > 0, its reversals add up to no more than it, and each is of its quest and
 *   account.
 */

export interface QuestViolation {
  questId: number;
  totalPoints: number;
  pointsRemaining: number;
  /** Σ payouts.amount of the quest. */
  paidOut: number;
  /** Σ reversals.amount of the quest. */
  reversed: number;
  /** total_points − (points_remaining + paid out − reversed); 0 when only a sign is wrong. */
  discrepancy: number;
  problems: string[];
}

export interface AccountViolation {
  accountId: number;
  pass: string;
  balance: number;
  paidIn: number;
  /** Σ reversals.amount taken from the account. */
  reversed: number;
  /** balance − (Σ payouts.amount − Σ reversals.amount). */
  discrepancy: number;
  problems: string[];
}

export interface PayoutViolation {
  payoutId: string;
  questId: number;
  accountId: number;
  amount: number;
  /** Σ amount of its reversals. */
  reversed: number;
  problems: string[];
}

export interface AuditReport {
  ok: boolean;
  checked: {
    quests: number;
    accounts: number;
    payouts: number;
    pointsPaidOut: number;
    reversals: number;
    pointsReversed: number;
  };
  violations: { quests: number; accounts: number; payouts: number };
  /** Offending rows, at most `limit` of each kind; `violations` counts them all. */
  quests: QuestViolation[];
  accounts: AccountViolation[];
  payouts: PayoutViolation[];
}

/** Offending rows of one kind (at most `limit`) and how many there are in all. */
interface Found<T> {
  rows: T[];
  count: number;
}

export async function audit(sql: Sql, opts: { limit?: number } = {}): Promise<AuditReport> {
  const limit = opts.limit ?? 100;
  // A repeatable-read snapshot: the counts and the violations describe one instant even while
  // allocations go on. Read-only, so it never blocks writers.
  return sql.begin('isolation level repeatable read read only', async (transaction) => {
    const tx = transaction as unknown as Sql;
    const checked = await totals(tx);
    const quests = await questViolations(tx, limit);
    const accounts = await accountViolations(tx, limit);
    const payouts = await payoutViolations(tx, limit);
    const violations = { quests: quests.count, accounts: accounts.count, payouts: payouts.count };
    return {
      ok: violations.quests + violations.accounts + violations.payouts === 0,
      checked,
      violations,
      quests: quests.rows,
      accounts: accounts.rows,
      payouts: payouts.rows,
    };
  }) as Promise<AuditReport>;
}

async function totals(tx: Sql): Promise<AuditReport['checked']> {
  const [row] = await tx<
    { quests: number; accounts: number; payouts: number; paid: string; reversals: number; reversed: string }[]
  >`
    select (select count(*) from quests)::int as quests,
           (select count(*) from accounts)::int as accounts,
           (select count(*) from payouts)::int as payouts,
           (select coalesce(sum(amount), 0) from payouts)::text as paid,
           (select count(*) from reversals)::int as reversals,
           (select coalesce(sum(amount), 0) from reversals)::text as reversed`;
  return {
    quests: row!.quests,
    accounts: row!.accounts,
    payouts: row!.payouts,
    pointsPaidOut: Number(row!.paid),
    reversals: row!.reversals,
    pointsReversed: Number(row!.reversed),
  };
}

/** Per quest: total_points = points_remaining + Σ payouts − Σ reversals, and the signs. */
async function questViolations(tx: Sql, limit: number): Promise<Found<QuestViolation>> {
  const rows = await tx<
    {
      id: number;
      total_points: string;
      points_remaining: string;
      paid: string;
      reversed: string;
      discrepancy: string;
      problems: string[];
      n: number;
    }[]
  >`
    with paid as (select quest_id, sum(amount) as paid from payouts group by quest_id),
    reversed as (select quest_id, sum(amount) as reversed from reversals group by quest_id),
    checked as (
      select q.id, q.total_points, q.points_remaining, coalesce(p.paid, 0) as paid, coalesce(r.reversed, 0) as reversed,
             array_remove(array[
               case when q.total_points <> q.points_remaining + coalesce(p.paid, 0) - coalesce(r.reversed, 0)
                    then 'total_points <> points_remaining + sum(payouts) - sum(reversals)' end,
               case when q.total_points < 0 then 'total_points < 0' end,
               case when q.points_remaining < 0 then 'points_remaining < 0' end,
               case when q.points_remaining > q.total_points then 'points_remaining > total_points' end
             ], null) as problems
      from quests q left join paid p on p.quest_id = q.id left join reversed r on r.quest_id = q.id
    )
    select id, total_points::text, points_remaining::text, paid::text, reversed::text,
           (total_points - points_remaining - paid + reversed)::text as discrepancy, problems,
           count(*) over ()::int as n
    from checked where cardinality(problems) > 0
    order by id limit ${limit}`;
  return {
    count: rows[0]?.n ?? 0,
    rows: rows.map((r) => ({
      questId: r.id,
      totalPoints: Number(r.total_points),
      pointsRemaining: Number(r.points_remaining),
      paidOut: Number(r.paid),
      reversed: Number(r.reversed),
      discrepancy: Number(r.discrepancy),
      problems: r.problems,
    })),
  };
}

/** Per account: balance = Σ payouts − Σ reversals, never below zero. */
async function accountViolations(tx: Sql, limit: number): Promise<Found<AccountViolation>> {
  const rows = await tx<
    {
      id: number;
      pass_address: string;
      balance: string;
      paid: string;
      reversed: string;
      discrepancy: string;
      problems: string[];
      n: number;
    }[]
  >`
    with paid as (select account_id, sum(amount) as paid from payouts group by account_id),
    reversed as (select account_id, sum(amount) as reversed from reversals group by account_id),
    checked as (
      select a.id, a.pass_address, a.balance, coalesce(p.paid, 0) as paid, coalesce(r.reversed, 0) as reversed,
             array_remove(array[
               case when a.balance <> coalesce(p.paid, 0) - coalesce(r.reversed, 0) then 'balance <> sum(payouts) - sum(reversals)' end,
               case when a.balance < 0 then 'balance < 0' end
             ], null) as problems
      from accounts a left join paid p on p.account_id = a.id left join reversed r on r.account_id = a.id
    )
    select id, pass_address, balance::text, paid::text, reversed::text, (balance - paid + reversed)::text as discrepancy,
           problems, count(*) over ()::int as n
    from checked where cardinality(problems) > 0
    order by id limit ${limit}`;
  return {
    count: rows[0]?.n ?? 0,
    rows: rows.map((r) => ({
      accountId: r.id,
      pass: r.pass_address,
      balance: Number(r.balance),
      paidIn: Number(r.paid),
      reversed: Number(r.reversed),
      discrepancy: Number(r.discrepancy),
      problems: r.problems,
    })),
  };
}

/** Per payout: a positive amount, reversed no further than it, by reversals of its own quest and account. */
async function payoutViolations(tx: Sql, limit: number): Promise<Found<PayoutViolation>> {
  const rows = await tx<
    { id: string; quest_id: number; account_id: number; amount: string; reversed: string; problems: string[]; n: number }[]
  >`
    with reversed as (
      select r.payout_id, sum(r.amount) as reversed,
             bool_or(r.quest_id <> p.quest_id or r.account_id <> p.account_id) as misplaced
      from reversals r join payouts p on p.id = r.payout_id group by r.payout_id
    ),
    checked as (
      select p.id, p.quest_id, p.account_id, p.amount, coalesce(r.reversed, 0) as reversed,
             array_remove(array[
               case when p.amount <= 0 then 'amount <= 0' end,
               case when coalesce(r.reversed, 0) > p.amount then 'sum(reversals) > amount' end,
               case when r.misplaced then 'a reversal of another quest or account' end
             ], null) as problems
      from payouts p left join reversed r on r.payout_id = p.id
      where p.amount <= 0 or r.payout_id is not null
    )
    select id, quest_id, account_id, amount::text, reversed::text, problems, count(*) over ()::int as n
    from checked where cardinality(problems) > 0
    order by id limit ${limit}`;
  return {
    count: rows[0]?.n ?? 0,
    rows: rows.map((r) => ({
      payoutId: r.id,
      questId: r.quest_id,
      accountId: r.account_id,
      amount: Number(r.amount),
      reversed: Number(r.reversed),
      problems: r.problems,
    })),
  };
}
