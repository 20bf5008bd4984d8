import { type BatchInfo, CreditBatchError, createQuestClient, DEFAULT_RETRY, type QuestError } from '@quest/client';
import { CliError, type CommandOutput, type Context, EXIT } from '../context.ts';
import { type CreditCsvRow, countCreditRows, fileSha256 as sha256OfFile, openCreditCsv } from '../csv.ts';
import { FailedRowsFile } from '../credit/failed-rows.ts';
import { creditKeyPrefix } from '../credit/keys.ts';
import { formatDuration, Progress, type ProgressState } from '../credit/progress.ts';
import { batchLabel, CreditStop, refusalStop, type Summary, summaryJson, summaryText, Tally } from '../credit/report.ts';

/**
 * `quest-admin credit`: credit the rows of a CSV (`address,points`) to one quest through the API's
 * batch endpoint, in file order, exactly once per row however often the command is re-run.
 *
 * The crediting itself is @quest/client's creditMany — batches, their keys, several in flight in
 * the quest's order, retries, stalls, resumes: the same code any client of the API uses. This
 * command adds the file around it:
 * - The file's bytes are hashed first (one sequential read, no parsing): the digest is part of
 *   every batch's Idempotency-Key (credit/keys.ts), so it must be known before the first batch.
 * - Then ONE pass parses the CSV (csv.ts) and hands its rows to creditMany as it goes.
 * - Re-runs replay: the same file and --batch-size give the same batches and keys; the service
 *   answers a batch an earlier run created from its stored outcome (`Idempotent-Replayed: true`),
 *   and the summary counts those rows as replayed rather than newly credited.
 * - A malformed CSV line stops the run there, after the batches before it (already sent) finish.
 *
 * Modules: credit/command (the command line: flags, help), options (their limits and parsers), keys,
 * progress, failed-rows, report (tally, summary, guidance). This one is loaded when the command runs.
 */

export { DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE } from '../credit/options.ts';
/** Attempts per request before a run gives up (the client's default policy). */
export const MAX_ATTEMPTS = DEFAULT_RETRY.maxAttempts;

export interface CreditOptions {
  quest: number;
  key: string;
  file: string;
  batchSize: number;
  /** Whether --batch-size was typed (else it is the default): the hints repeat only what was typed. */
  batchSizeGiven: boolean;
  /** Batches in flight (accepted by the service, results not yet collected). */
  concurrency: number;
  baseUrl?: string;
  /** Seconds a batch may show no progress before it is sent again. */
  stallTimeout: number;
  /** Stalls of one batch before the run stops. */
  stallTries: number;
}

export class Interrupted extends Error {
  constructor(readonly signal: string) {
    super(`interrupted by ${signal}`);
  }
}

/** Stop cleanly on the first Ctrl-C / SIGTERM (summary, failed rows so far); a second one kills. */
export function interruptible(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      release();
      process.kill(process.pid, signal);
      return;
    }
    controller.abort(new Interrupted(signal));
  };
  const release = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { signal: controller.signal, release };
}

export async function creditCommand(ctx: Context, opts: CreditOptions): Promise<CommandOutput> {
  const started = Date.now();
  const baseUrl = opts.baseUrl ?? ctx.config.API_BASE_URL;
  const progress = new Progress(ctx.io);
  const { signal, release } = interruptible();
  const failedFile = new FailedRowsFile(`${opts.file}.failed.csv`);
  const tally = new Tally();
  /** Batches the service accepted (answered 200 or 202): their results may outlive an interrupted run. */
  let acceptedBatches = 0;
  let error: CreditStop | undefined;

  try {
    const fileSha256 = await sha256OfFile(opts.file);
    const csv = await openCreditCsv(opts.file);
    const state: ProgressState = { size: csv.size, bytesDone: 0, rows: 0, succeeded: 0, failed: 0 };
    const settle = (bytes: number | undefined) => {
      if (bytes !== undefined) state.bytesDone = bytes;
      state.rows = tally.rows;
      state.succeeded = tally.succeeded;
      state.failed = tally.failed;
      progress.update();
    };
    progress.start(state);
    const quest = createQuestClient({ baseUrl, apiKey: opts.key, headers: { 'user-agent': 'quest-admin-credit' } });
    const run = quest.creditMany(opts.quest, csv.rows, {
      batchSize: opts.batchSize,
      concurrency: opts.concurrency,
      keyPrefix: creditKeyPrefix({ fileSha256, questId: opts.quest }),
      stall: { timeoutMs: opts.stallTimeout * 1000, tries: opts.stallTries },
      signal,
      onEvent: (e) => {
        if (e.type === 'accepted') acceptedBatches++;
        else if (e.type === 'progress') settle(e.batch.rows[e.processed - 1]?.bytes);
        else if (e.type === 'retry') {
          const { message, retry, maxRetries, delayMs } = e.retry;
          progress.notice(
            `warning: ${batchLabel(e.batch)}: ${message}; retry ${retry} of ${maxRetries} in ${(delayMs / 1000).toFixed(1)} s`,
          );
        } else {
          progress.notice(
            `warning: ${batchLabel(e.batch)}: no progress for ${formatDuration(e.idleMs)}; sending it again (${e.stalls} of ${e.maxStalls})`,
          );
        }
      },
    });
    for await (const report of run) {
      await failedFile.write(tally.addReport(report));
      settle(report.results.at(-1)?.row.bytes);
    }
    if (csv.sha256() !== fileSha256) {
      throw new CreditStop(
        'FILE_CHANGED',
        `${opts.file} changed while it was being credited; what was sent is recorded under the first version's keys — check the quest before re-running`,
      );
    }
  } catch (e) {
    // Nothing sent: a plain command failure (unreadable file, malformed header), reported by the runner.
    if (e instanceof CliError && tally.batches === 0 && tally.rows === 0) throw e;
    const validRows = await validRowsPastFirstBatch(e, opts.file);
    error = toStop(signal.aborted ? signal.reason : e, tally.batches, acceptedBatches, { ...opts, validRows });
  } finally {
    progress.stop();
    release();
  }

  const summary: Summary = {
    quest: opts.quest,
    file: opts.file,
    batchSize: opts.batchSize,
    batchSizeGiven: opts.batchSizeGiven,
    tally,
    failedFile: await failedFile.close(),
    elapsedMs: Date.now() - started,
    ...(error ? { error } : {}),
  };
  if (error) ctx.io.stderr(`error: ${error.message}\n`);
  const exitCode = error ? EXIT.failed : tally.failed > 0 ? EXIT.rowsNotCredited : EXIT.ok;
  return { json: summaryJson(summary), text: summaryText(summary), exitCode };
}

type StopOptions = CreditOptions & { validRows: number | undefined };

/**
 * When batch 1 is refused as credited before with other rows (IDEMPOTENCY_KEY_REUSED, the rows the
 * service recorded in `details.total`): the file's valid rows, counted up to one past that many, for
 * firstRunSize to tell whether that batch was cut by a --batch-size or held the whole file.
 */
async function validRowsPastFirstBatch(e: unknown, file: string): Promise<number | undefined> {
  if (!(e instanceof CreditBatchError) || e.code !== 'IDEMPOTENCY_KEY_REUSED' || e.batch.index !== 0) return undefined;
  const total = (e.details as { total?: unknown } | null | undefined)?.total;
  if (typeof total !== 'number' || !Number.isSafeInteger(total) || total < 1) return undefined;
  return countCreditRows(file, total + 1).catch(() => undefined);
}

/** Why one batch could not be credited, in the operator's terms. */
function batchStop(e: QuestError, batch: BatchInfo<CreditCsvRow>, opts: StopOptions): CreditStop {
  const label = batchLabel(batch);
  if (e.status !== undefined && e.status < 500 && !e.retryable)
    return refusalStop(e, batch, { questId: opts.quest, batchSize: opts.batchSize, validRows: opts.validRows });
  switch (e.code) {
    case 'STALLED':
      return new CreditStop('STALLED', `${label}: ${e.message}; giving up (re-run the same command to finish it)`);
    case 'ALLOCATION_FAILED':
      return new CreditStop('ALLOCATION_FAILED', `${label}: ${e.message}; giving up`);
    case 'BAD_RESPONSE':
      return new CreditStop('BAD_RESPONSE', `${label}: unexpected answer from the API (${e.message})`);
    default:
      // Transport errors, 429 and 5xx through every retry.
      return new CreditStop('API_UNAVAILABLE', `${label}: ${e.message}`);
  }
}

function toStop(e: unknown, recorded: number, accepted: number, opts: StopOptions): CreditStop {
  if (e instanceof CreditStop) return e;
  if (e instanceof CreditBatchError) return batchStop(e, e.batch as BatchInfo<CreditCsvRow>, opts);
  if (e instanceof Interrupted) {
    const pending = accepted - recorded;
    const more = pending > 0 ? ` (${pending} more accepted by the service, which still decides them)` : '';
    return new CreditStop('INTERRUPTED', `${e.message} after ${recorded} batches${more}; re-run the same command to finish`);
  }
  if (e instanceof CliError) return new CreditStop(e.code, e.message);
  const message = e instanceof Error ? e.message : String(e);
  return new CreditStop('INTERNAL_ERROR', `unexpected failure: ${message.split('\n')[0]}`);
}
