import { plural, renderFields } from '../format.ts';
import { type BatchItemResult, CreditStop, itemIndexFromDetails, type Refused } from './api.ts';
import { fmt } from './progress.ts';
import type { CreditItem, FailedRow } from './rows.ts';

/**
 * What a run did, and what it tells the operator: counts (newly credited vs replayed), the
 * summary, and the guidance for a re-run — one story about --batch-size everywhere: a re-run must
 * use the size the file was first credited with, and every message that says so names it.
 */

export class Tally {
  /** Rows read and decided (credited, rejected, or invalid). */
  rows = 0;
  /** Batches whose every result was collected. */
  batches = 0;
  /** Rows credited: by this run (`credited`) or by an earlier run of the same file (`replayed`). */
  succeeded = 0;
  credited = 0;
  replayed = 0;
  /** Rows not credited: invalid, or rejected by the service (then also replayed or not, see above). */
  failed = 0;
  readonly byCode = new Map<string, number>();

  /** A batch's results, in item order; returns its rejected rows, in file order. */
  addBatch(items: readonly CreditItem[], results: readonly BatchItemResult[], replayedBelow: number): FailedRow[] {
    const rejected: FailedRow[] = [];
    for (let k = 0; k < results.length; k++) {
      const r = results[k]!;
      if (r.status === 'completed') {
        this.succeeded++;
        if (k < replayedBelow) this.replayed++;
        else this.credited++;
      } else {
        const item = items[k]!;
        rejected.push({ line: item.line, address: item.address, points: item.pointsText, code: r.error?.code ?? 'REJECTED' });
      }
    }
    this.rows += results.length - rejected.length;
    this.batches++;
    return rejected;
  }

  addFailed(rows: readonly FailedRow[]): void {
    for (const row of rows) this.byCode.set(row.code, (this.byCode.get(row.code) ?? 0) + 1);
    this.failed += rows.length;
    this.rows += rows.length;
  }
}

export const linesOf = (items: readonly CreditItem[]) =>
  items.length ? `CSV lines ${fmt(items[0]!.line)}–${fmt(items[items.length - 1]!.line)}` : 'no rows';

export const batchLabel = (index: number, items: readonly CreditItem[]) => `batch ${fmt(index + 1)} (${linesOf(items)})`;

/** The --batch-size a refused batch 1 says the file was first credited with (the API's `details.total`). */
export function originalBatchSize(e: Refused, index: number, batchSize: number): number | undefined {
  if (e.code !== 'IDEMPOTENCY_KEY_REUSED' || index !== 0) return undefined;
  const total = (e.details as { total?: unknown } | null | undefined)?.total;
  return typeof total === 'number' && Number.isSafeInteger(total) && total >= 1 && total !== batchSize ? total : undefined;
}

/** Why the run stops when the API refuses a batch (a 4xx), with the fix where there is one. */
export function refusalStop(
  e: Refused,
  b: { index: number; items: readonly CreditItem[] },
  o: { questId: number; batchSize: number },
): CreditStop {
  const at = e.code === 'VALIDATION_FAILED' ? itemIndexFromDetails(e.details) : undefined;
  const line = at === undefined ? undefined : b.items[at]?.line;
  const where = line === undefined ? '' : ` (CSV line ${fmt(line)})`;
  const original = originalBatchSize(e, b.index, o.batchSize);
  let hint = '';
  if (e.code === 'IDEMPOTENCY_KEY_REUSED') {
    hint =
      original !== undefined
        ? ` — this file was credited to quest ${o.questId} before with --batch-size ${original}; re-run with --batch-size ${original} (nothing was credited twice)`
        : ` — this file was credited to quest ${o.questId} before with a --batch-size other than ${o.batchSize}; re-run with that size, which the earlier run's summary names (nothing was credited twice)`;
  } else if (e.code === 'BATCH_TOO_LARGE' || e.code === 'PAYLOAD_TOO_LARGE') hint = ' — use a smaller --batch-size';
  const stop = new CreditStop(
    e.code,
    `${batchLabel(b.index, b.items)} was refused with ${e.status} ${e.code}${where}: ${e.message}${hint}`,
    line,
  );
  if (original !== undefined) stop.batchSize = original;
  return stop;
}

export interface Summary {
  quest: number;
  file: string;
  batchSize: number;
  tally: Tally;
  failedFile: string | null;
  elapsedMs: number;
  error?: CreditStop;
}

export function summaryJson(s: Summary): Record<string, unknown> {
  const t = s.tally;
  const json: Record<string, unknown> = {
    quest: s.quest,
    file: s.file,
    batchSize: s.batchSize,
    batches: t.batches,
    total: t.rows,
    succeeded: t.succeeded,
    credited: t.credited,
    replayed: t.replayed,
    failed: t.failed,
    failedFile: s.failedFile,
    elapsedMs: s.elapsedMs,
  };
  if (s.error) {
    json.error = {
      code: s.error.code,
      message: s.error.message,
      ...(s.error.line === undefined ? {} : { line: s.error.line }),
      ...(s.error.batchSize === undefined ? {} : { batchSize: s.error.batchSize }),
    };
  }
  return json;
}

/** `succeeded` split into what this run credited and what earlier runs had (replays). */
export function succeededText(t: Tally): string {
  if (t.succeeded === 0) return '0';
  if (t.replayed === 0) return `${fmt(t.succeeded)} (newly credited)`;
  return `${fmt(t.succeeded)}: ${fmt(t.replayed)} already credited before (replayed), ${fmt(t.credited)} newly credited`;
}

/** The line that tells how to go on: always names the --batch-size to use. */
export function closingHint(s: Summary): string | undefined {
  if (!s.error) return undefined;
  if (s.error.batchSize !== undefined)
    return `Re-run with --batch-size ${s.error.batchSize}, the size ${s.file} was first credited with: its batches are then replayed, not credited again.`;
  if (s.error.code === 'IDEMPOTENCY_KEY_REUSED')
    return `Re-run with the --batch-size ${s.file} was first credited with (not ${s.batchSize}): its batches are then replayed, not credited again.`;
  return `Re-run the same command (same file, --batch-size ${s.batchSize}) to finish: completed batches are not credited again.`;
}

export function summaryText(s: Summary): string {
  const t = s.tally;
  const rate = s.elapsedMs > 0 ? Math.round(t.rows / (s.elapsedMs / 1000)) : 0;
  const failedText = [...t.byCode].map(([code, n]) => `${code} ${fmt(n)}`).join(', ');
  const fields: [string, string][] = [
    ['batches', `${fmt(t.batches)} (up to ${plural(s.batchSize, 'row')} each: --batch-size ${s.batchSize})`],
    ['total', fmt(t.rows)],
    ['succeeded', succeededText(t)],
    ['failed', t.failed ? `${fmt(t.failed)} (${failedText})` : '0'],
    ['failed rows', s.failedFile ?? '-'],
    ['elapsed', `${(s.elapsedMs / 1000).toFixed(1)} s`],
    ['rate', `${fmt(rate)} rows/s`],
  ];
  const title = s.error
    ? `Credit of ${s.file} to quest ${s.quest} stopped after ${plural(t.batches, 'batch', 'batches')}`
    : t.credited === 0 && t.replayed > 0
      ? `Nothing new credited: ${s.file} was already credited to quest ${s.quest} (${fmt(t.replayed)} rows replayed)`
      : `Credited ${s.file} to quest ${s.quest}`;
  const hint = closingHint(s);
  return renderFields(title, fields) + (hint ? `\n\n${hint}` : '');
}
