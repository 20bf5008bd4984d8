import { plural, renderFields } from '../format.ts';
import { fmt } from '../credit/progress.ts';

/**
 * What a `quest-admin payouts reverse` run did, and what it tells the operator: counts (newly
 * reversed, replayed from an earlier run, already reversed), the failed rows, the summary and the
 * guidance for a re-run.
 */

export type ReverseMode = 'payouts' | 'addresses';

/** Why the run stopped; `code` is the API's error code where there is one. */
export class ReverseStop extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A row (or one payout of an address's row) that was not reversed, for the failed-rows file. */
export interface FailedReversal {
  line: number;
  /** --file: the row's cells; --addresses: the address, and the payout when it got that far. */
  payoutId: string;
  points: string;
  address: string;
  code: string;
}

/** The failed-rows file's columns per mode: a --file one is itself a valid --file input. */
export const FAILED_COLUMNS: Record<ReverseMode, readonly string[]> = {
  payouts: ['line', 'payout_id', 'points', 'code'],
  addresses: ['line', 'address', 'payout_id', 'code'],
};

export function failedCells(mode: ReverseMode, f: FailedReversal): (string | number)[] {
  return mode === 'payouts' ? [f.line, f.payoutId, f.points, f.code] : [f.line, f.address, f.payoutId, f.code];
}

/** Outcomes that count as done: the payout has nothing more to give back for this row. */
export class Tally {
  /** Input rows read (payout ids, or addresses). */
  rows = 0;
  /** Reversals decided (one per payout row; one per payout of each address). */
  payouts = 0;
  /** Taken back by this run, and how many points. */
  reversed = 0;
  pointsReversed = 0;
  /** Replayed: reversed by an earlier run with the same key. */
  replayed = 0;
  /** PAYOUT_ALREADY_REVERSED: nothing left to take back (reversed before, by this tool or otherwise). */
  alreadyReversed = 0;
  /** --addresses: addresses with no payout on the quest. */
  addressesWithoutPayouts = 0;
  failed = 0;
  readonly byCode = new Map<string, number>();
  readonly failures: FailedReversal[] = [];

  get succeeded(): number {
    return this.reversed + this.replayed + this.alreadyReversed;
  }

  reversal(amount: number, replayed: boolean): void {
    this.payouts++;
    if (replayed) this.replayed++;
    else {
      this.reversed++;
      this.pointsReversed += amount;
    }
  }

  done(): void {
    this.payouts++;
    this.alreadyReversed++;
  }

  /** A row or payout not reversed; `sent` when it was a reversal the service decided. */
  fail(f: FailedReversal, sent: boolean): void {
    if (sent) this.payouts++;
    this.failed++;
    this.byCode.set(f.code, (this.byCode.get(f.code) ?? 0) + 1);
    this.failures.push(f);
  }
}

export interface Summary {
  quest: number;
  mode: ReverseMode;
  file: string;
  reason: string | undefined;
  tally: Tally;
  failedFile: string | null;
  elapsedMs: number;
  error?: ReverseStop;
}

export function summaryJson(s: Summary): Record<string, unknown> {
  const t = s.tally;
  return {
    quest: s.quest,
    mode: s.mode,
    file: s.file,
    rows: t.rows,
    payouts: t.payouts,
    succeeded: t.succeeded,
    reversed: t.reversed,
    pointsReversed: t.pointsReversed,
    replayed: t.replayed,
    alreadyReversed: t.alreadyReversed,
    ...(s.mode === 'addresses' ? { addressesWithoutPayouts: t.addressesWithoutPayouts } : {}),
    failed: t.failed,
    failedFile: s.failedFile,
    elapsedMs: s.elapsedMs,
    ...(s.error ? { error: { code: s.error.code, message: s.error.message } } : {}),
  };
}

/** Stops that the same command, run again, gets past. */
const RERUN_FINISHES = new Set([
  'API_UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'REVERSAL_FAILED',
  'INTERRUPTED',
  'BAD_RESPONSE',
  'NETWORK_ERROR',
]);

/** The line that tells how to go on, where there is something to do. */
export function closingHint(s: Summary): string | undefined {
  const t = s.tally;
  const e = s.error;
  const same = 'the same command (same file, same --reason)';
  if (!e) {
    if (!t.failed) return undefined;
    const reused = t.byCode.get('IDEMPOTENCY_KEY_REUSED')
      ? ' IDEMPOTENCY_KEY_REUSED: reversed by an earlier run with another --reason or amount; nothing was taken twice.'
      : '';
    return `The rows not reversed are listed in ${s.failedFile ?? 'the failed-rows file'} with their codes; running ${same} again changes nothing for them.${reused}`;
  }
  switch (e.code) {
    case 'INVALID_API_KEY':
    case 'NOT_QUEST_OWNER':
      return `Use an active API key of the owner of quest ${s.quest} (quest-admin key list); with it, ${same} finishes: nothing is reversed twice.`;
    case 'QUESTS_DISABLED':
      return `Switch quests on (quest-admin features set quests=on), then run ${same} to finish: nothing is reversed twice.`;
    case 'INVALID_CSV':
      return t.rows === 0
        ? 'Fix the file and run again: nothing was reversed.'
        : `Fix the file and run ${same} again: the rows done are replayed, not reversed twice.`;
    default:
      return RERUN_FINISHES.has(e.code) ? `Re-run ${same} to finish: what was reversed is not reversed again.` : undefined;
  }
}

function title(s: Summary): string {
  const t = s.tally;
  const what = `${s.mode === 'payouts' ? 'the payouts' : 'the payouts of the addresses'} in ${s.file}`;
  if (s.error) return `Reversal of ${what} on quest ${s.quest} stopped after ${plural(t.payouts, 'payout')}`;
  if (t.succeeded === 0 && t.failed > 0) return `Nothing reversed: none of ${what} could be reversed on quest ${s.quest}`;
  const done =
    t.reversed === 0 && t.succeeded > 0
      ? `Nothing new reversed: ${what} were already reversed on quest ${s.quest}`
      : `Reversed ${what} on quest ${s.quest}`;
  return t.failed > 0 ? `${done}, except ${plural(t.failed, 'row')} (see ${s.failedFile})` : done;
}

export function summaryText(s: Summary): string {
  const t = s.tally;
  const failedText = [...t.byCode].map(([code, n]) => `${code} ${fmt(n)}`).join(', ');
  const fields: [string, string][] = [
    ['rows', fmt(t.rows)],
    ['payouts', fmt(t.payouts)],
    ['reversed', `${fmt(t.reversed)} (${plural(t.pointsReversed, 'point')} taken back)`],
    ['replayed', `${fmt(t.replayed)} (reversed by an earlier run)`],
    ['already reversed', fmt(t.alreadyReversed)],
    ...(s.mode === 'addresses' ? ([['no payouts', `${fmt(t.addressesWithoutPayouts)} addresses`]] as [string, string][]) : []),
    ['failed', t.failed ? `${fmt(t.failed)} (${failedText})` : '0'],
    ['failed rows', s.failedFile ?? '-'],
    ['reason', s.reason ?? '-'],
    ['elapsed', `${(s.elapsedMs / 1000).toFixed(1)} s`],
  ];
  const hint = closingHint(s);
  return renderFields(title(s), fields) + (hint ? `\n\n${hint}` : '');
}
