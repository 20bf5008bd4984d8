import type { BatchInfo, CreditBatchReport, QuestError } from '@quest/client';
import { type FailedRow, INVALID_ROW } from '@quest/csv';
import type { CreditCsvRow } from '../csv.ts';
import { plural, renderFields } from '../format.ts';
import { DEFAULT_BATCH_SIZE } from './options.ts';
import { fmt } from './progress.ts';

/**
 * What a run did, and what it tells the operator: counts (newly credited vs replayed), the
 * summary, and the guidance for a re-run — one story about --batch-size everywhere: a re-run must
 * use the size the file was first credited with, and every message that says so names it.
 */

/** Why the run stopped; `code` is the API's error code where there is one. */
export class CreditStop extends Error {
  /** The --batch-size a re-run must use, when the API told (a refused batch 1). */
  firstRun?: TypedSize;

  constructor(
    readonly code: string,
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

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
  /** Line of the last row reported: the file is done up to it. */
  lastLine = 0;

  /** A report of the client's creditMany; returns its rows that were not credited, in file order. */
  addReport(report: CreditBatchReport<CreditCsvRow>): FailedRow[] {
    const failed: FailedRow[] = [];
    for (const r of report.results) {
      if (r.status === 'credited') {
        this.succeeded++;
        if (r.replayed) this.replayed++;
        else this.credited++;
        continue;
      }
      const { line, cells = r.row } = r.row;
      const failure =
        r.status === 'invalid'
          ? { code: INVALID_ROW, reason: r.row.reason ?? r.reason }
          : { code: r.code as string, reason: r.message };
      failed.push({ line, address: cells.address, points: cells.points, ...failure });
      this.byCode.set(failure.code, (this.byCode.get(failure.code) ?? 0) + 1);
    }
    this.rows += report.results.length;
    this.failed += failed.length;
    this.lastLine = report.results.at(-1)?.row.line ?? this.lastLine;
    if (report.batch) this.batches++;
    return failed;
  }
}

/** Index of the batch item a VALIDATION_FAILED answer names (`details[].path` like `allocations.37.address`). */
export function itemIndexFromDetails(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const issue of details) {
    const path = (issue as { path?: unknown } | null)?.path;
    const m = typeof path === 'string' ? /(?:^|\.)allocations\.(\d+)(?:\.|$)/.exec(path) : null;
    if (m) return Number(m[1]);
  }
  return undefined;
}

export const linesOf = (rows: readonly { line: number }[]) =>
  rows.length ? `CSV lines ${fmt(rows[0]!.line)}–${fmt(rows[rows.length - 1]!.line)}` : 'no rows';

export const batchLabel = (b: BatchInfo<{ line: number }>) => `batch ${fmt(b.index + 1)} (${linesOf(b.rows)})`;

/** A --batch-size as the operator types it: a number, or none for the default. */
export interface TypedSize {
  size: number;
  typed: boolean;
}

/**
 * The --batch-size a file was first credited with, when a refused batch 1 tells (IDEMPOTENCY_KEY_REUSED
 * with `details.total`: the rows the service recorded for that batch). A file with more valid rows
 * than that was cut at exactly that size; otherwise batch 1 held the whole file, and any size of at
 * least that many rebuilds it — the default, when it is large enough, so that is what is named.
 * `validRows`: the file's valid rows, counted at least up to total + 1 (unknown: assume more).
 */
export function firstRunSize(e: QuestError, index: number, o: { batchSize: number; validRows?: number }): TypedSize | undefined {
  if (e.code !== 'IDEMPOTENCY_KEY_REUSED' || index !== 0) return undefined;
  const total = (e.details as { total?: unknown } | null | undefined)?.total;
  if (typeof total !== 'number' || !Number.isSafeInteger(total) || total < 1 || total === o.batchSize) return undefined;
  const cut = o.validRows === undefined || o.validRows > total;
  if (cut || total > DEFAULT_BATCH_SIZE) return { size: total, typed: total !== DEFAULT_BATCH_SIZE };
  return { size: DEFAULT_BATCH_SIZE, typed: false };
}

/** Why the run stops when the API refuses a batch (a 4xx), with the fix where there is one. */
export function refusalStop(
  e: QuestError,
  b: BatchInfo<{ line: number }>,
  o: { questId: number; batchSize: number; validRows?: number },
): CreditStop {
  const at = e.code === 'VALIDATION_FAILED' ? itemIndexFromDetails(e.details) : undefined;
  const line = at === undefined ? undefined : b.rows[at]?.line;
  const where = line === undefined ? '' : ` (CSV line ${fmt(line)})`;
  const original = firstRunSize(e, b.index, o);
  let hint = '';
  if (e.code === 'IDEMPOTENCY_KEY_REUSED') {
    const how = original && (original.typed ? `with --batch-size ${original.size}` : 'without --batch-size');
    hint = how
      ? ` — this file was credited to quest ${o.questId} before ${how}; re-run ${how} (nothing was credited twice)`
      : ` — this file was credited to quest ${o.questId} before with a --batch-size other than ${o.batchSize}; re-run with that size, which the earlier run's summary names (nothing was credited twice)`;
  } else if (e.code === 'BATCH_TOO_LARGE' || e.code === 'PAYLOAD_TOO_LARGE') hint = ' — use a smaller --batch-size';
  const stop = new CreditStop(
    e.code,
    `${batchLabel(b)} was refused with ${e.status} ${e.code}${where}: ${e.message}${hint}`,
    line,
  );
  if (original) stop.firstRun = original;
  return stop;
}

export interface Summary {
  quest: number;
  file: string;
  batchSize: number;
  /** Whether the operator typed --batch-size (else the default was used): the hints repeat only what was typed. */
  batchSizeGiven: boolean;
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
      ...(s.error.firstRun === undefined ? {} : { batchSize: s.error.firstRun.size }),
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

/** Stops that the same command, run again, gets past: it then finishes the file. */
const RERUN_FINISHES = new Set([
  'API_UNAVAILABLE',
  'STALLED',
  'INTERRUPTED',
  'ALLOCATION_FAILED',
  'BAD_RESPONSE',
  'FILE_NOT_READABLE',
]);

/**
 * The line that tells how to go on, where there is something to do: a re-run is advised only where
 * it helps, and always names the --batch-size to use.
 */
export function closingHint(s: Summary): string | undefined {
  const t = s.tally;
  const e = s.error;
  const same = `the same command (same file${s.batchSizeGiven ? `, --batch-size ${s.batchSize}` : ''})`;
  if (!e) {
    if (!t.failed) return undefined;
    return `The rows not credited are listed in ${s.failedFile ?? 'the failed-rows file'} with their lines, codes and reasons; running ${same} again changes nothing for them. Credit corrected rows from a new file.`;
  }
  if (e.firstRun?.typed)
    return `Re-run with --batch-size ${e.firstRun.size}, the size ${s.file} was first credited with: its batches are then replayed, not credited again.`;
  if (e.firstRun)
    return `Re-run without --batch-size, as ${s.file} was first credited: its batches are then replayed, not credited again.`;
  switch (e.code) {
    case 'IDEMPOTENCY_KEY_REUSED':
      return `Re-run with the --batch-size ${s.file} was first credited with (not ${s.batchSize}): its batches are then replayed, not credited again.`;
    case 'INVALID_API_KEY':
    case 'NOT_QUEST_OWNER':
      return `Use an active API key of the owner of quest ${s.quest} (quest-admin key list); with it, ${same} finishes the file: completed batches are not credited again.`;
    case 'QUESTS_DISABLED':
      return `Switch quests on (quest-admin features set quests=on), then run ${same} to finish: completed batches are not credited again.`;
    case 'INVALID_CSV':
      if (t.rows === 0) return `Fix the file and run again: nothing was credited.`;
      return `Lines up to ${fmt(t.lastLine)} are done. Do not re-run an edited ${s.file}: its batches would get new keys and be credited again. Put the lines after line ${fmt(t.lastLine)}, corrected, in a new file and credit that.`;
    case 'BATCH_TOO_LARGE':
    case 'PAYLOAD_TOO_LARGE':
      return t.batches === 0 ? 'Re-run with a smaller --batch-size: nothing was credited.' : undefined;
    default:
      return RERUN_FINISHES.has(e.code) ? `Re-run ${same} to finish: completed batches are not credited again.` : undefined;
  }
}

/** The first line of the text summary: what happened, in one sentence. */
function title(s: Summary): string {
  const t = s.tally;
  if (s.error) return `Credit of ${s.file} to quest ${s.quest} stopped after ${plural(t.batches, 'batch', 'batches')}`;
  if (t.succeeded === 0 && t.failed > 0)
    return `Nothing credited: none of the ${plural(t.failed, 'row')} of ${s.file} could be credited to quest ${s.quest}`;
  const done =
    t.credited === 0 && t.replayed > 0
      ? `Nothing new credited: ${s.file} was already credited to quest ${s.quest} (${fmt(t.replayed)} rows replayed)`
      : `Credited ${s.file} to quest ${s.quest}`;
  return t.failed > 0 ? `${done}, except ${plural(t.failed, 'row')} (see ${s.failedFile})` : done;
}

export function summaryText(s: Summary): string {
  const t = s.tally;
  const rate = s.elapsedMs > 0 ? Math.round(t.rows / (s.elapsedMs / 1000)) : 0;
  const failedText = [...t.byCode].map(([code, n]) => `${code} ${fmt(n)}`).join(', ');
  const fields: [string, string][] = [
    [
      'batches',
      `${fmt(t.batches)} (up to ${plural(s.batchSize, 'row')} each${s.batchSizeGiven ? `: --batch-size ${s.batchSize}` : ''})`,
    ],
    ['total', fmt(t.rows)],
    ['succeeded', succeededText(t)],
    ['failed', t.failed ? `${fmt(t.failed)} (${failedText})` : '0'],
    ['failed rows', s.failedFile ?? '-'],
    ['elapsed', `${(s.elapsedMs / 1000).toFixed(1)} s`],
    ['rate', `${fmt(rate)} rows/s`],
  ];
  const hint = closingHint(s);
  return renderFields(title(s), fields) + (hint ? `\n\n${hint}` : '');
}
