import type { Command } from 'commander';
import { parseApiKey, parseRowId } from '../args.ts';
import { CliError, type CommandOutput, type Context } from '../context.ts';
import { fileSha256 as sha256OfFile, openCreditCsv } from '../csv.ts';
import { Api, CreditStop, Refused } from '../credit/api.ts';
import { type Accepted, BatchClient } from '../credit/batch.ts';
import { FailedRowsFile } from '../credit/failed-rows.ts';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_STALL_TIMEOUT_SECONDS,
  DEFAULT_STALL_TRIES,
  MAX_BATCH_SIZE,
  MAX_CONCURRENCY,
  parseBaseUrl,
  parseBatchSize,
  parseBoundedInt,
} from '../credit/options.ts';
import { batchIdempotencyKey, type PlannedBatch, planBatches } from '../credit/plan.ts';
import { runInOrder } from '../credit/pipeline.ts';
import { Progress, type ProgressState } from '../credit/progress.ts';
import { batchLabel, refusalStop, type Summary, summaryJson, summaryText, Tally } from '../credit/report.ts';
import { mergeByLine } from '../credit/rows.ts';

/**
 * `quest-admin credit`: credit the rows of a CSV (`address,points`) to one quest through the API's
 * batch endpoint, in file order, exactly once per row however often the command is re-run.
 *
 * - The file's bytes are hashed first (one sequential read, no parsing): the digest is part of
 *   every batch's Idempotency-Key, so it must be known before the first batch is sent.
 * - Then ONE pass parses, validates and batches the rows (credit/plan.ts) and sends the batches as
 *   it goes, `--concurrency` of them in flight in the quest's order (credit/pipeline.ts): batch k+1
 *   is POSTed once the service has taken batch k (`Prefer: respond-async` makes it answer 202 as
 *   soon as the batch is enqueued), while the results of the accepted batches are awaited.
 * - Re-runs replay: the same file and --batch-size give the same batches and keys; the service
 *   answers a batch an earlier run created from its stored outcome (`Idempotent-Replayed: true`),
 *   and the summary counts those rows as replayed rather than newly credited.
 * - A malformed CSV line stops the run there, after the batches before it (already sent) finish.
 *
 * Modules: credit/options (flags), rows (row checks), plan (batches, keys), api (HTTP, retries),
 * batch (one batch: POST, follow), pipeline (in-flight order), progress, failed-rows, report.
 */

export { DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE } from '../credit/options.ts';
export { MAX_ATTEMPTS } from '../credit/api.ts';

export interface CreditOptions {
  quest: number;
  key: string;
  file: string;
  batchSize: number;
  /** Batches in flight (accepted by the service, results not yet collected). */
  concurrency: number;
  baseUrl?: string;
  /** Seconds a batch may show no progress before it is sent again. */
  stallTimeout: number;
  /** Stalls of one batch before the run stops. */
  stallTries: number;
}

class Interrupted extends Error {
  constructor(readonly signal: string) {
    super(`interrupted by ${signal}`);
  }
}

/** Stop cleanly on the first Ctrl-C / SIGTERM (summary, failed rows so far); a second one kills. */
function interruptible(): { signal: AbortSignal; release(): void } {
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
    const settle = (bytes: number) => {
      state.bytesDone = bytes;
      state.rows = tally.rows;
      state.succeeded = tally.succeeded;
      state.failed = tally.failed;
      progress.update();
    };
    progress.start(state);
    const api = new Api(baseUrl, opts.key, signal, (message) => progress.notice(`warning: ${message}`));
    const client = new BatchClient(api, opts.quest, {
      respondAsync: opts.concurrency > 1,
      stall: { timeoutMs: opts.stallTimeout * 1000, tries: opts.stallTries },
    });
    const keyOf = (b: PlannedBatch) =>
      batchIdempotencyKey({ fileSha256, questId: opts.quest, batchSize: opts.batchSize, index: b.index });

    await runInOrder<
      PlannedBatch,
      Accepted | null,
      { accepted: Accepted; results: Awaited<ReturnType<BatchClient['follow']>> } | null
    >(planBatches(csv.rows, opts.batchSize), {
      concurrency: opts.concurrency,
      check: () => {
        if (signal.aborted) throw signal.reason;
      },
      submit: async (b) => {
        if (b.items.length === 0) return null; // only invalid rows trail the last batch
        try {
          const answer = await client.submit(keyOf(b), b.items, batchLabel(b.index, b.items));
          acceptedBatches++;
          return answer;
        } catch (e) {
          throw e instanceof Refused ? refusalStop(e, b, { questId: opts.quest, batchSize: opts.batchSize }) : e;
        }
      },
      follow: async (b, accepted) => {
        if (!accepted) return null;
        const span = b.bytesTo - b.bytesFrom;
        const results = await client.follow(accepted, keyOf(b), b.items, batchLabel(b.index, b.items), (n) =>
          settle(b.bytesFrom + Math.floor((span * n) / b.items.length)),
        );
        return { accepted, results };
      },
      record: async (b, done) => {
        const rejected = done ? tally.addBatch(b.items, done.results, done.accepted.replayedBelow) : [];
        const failed = mergeByLine(b.invalid, rejected);
        tally.addFailed(failed);
        await failedFile.write(failed);
        settle(b.bytesTo);
      },
    });
    if (csv.sha256() !== fileSha256) {
      throw new CreditStop(
        'FILE_CHANGED',
        `${opts.file} changed while it was being credited; what was sent is recorded under the first version's keys — check the quest before re-running`,
      );
    }
  } catch (e) {
    // Nothing sent: a plain command failure (unreadable file, malformed header), reported by the runner.
    if (e instanceof CliError && tally.batches === 0 && tally.rows === 0) throw e;
    error = toStop(signal.aborted ? signal.reason : e, tally.batches, acceptedBatches);
  } finally {
    progress.stop();
    release();
  }

  const summary: Summary = {
    quest: opts.quest,
    file: opts.file,
    batchSize: opts.batchSize,
    tally,
    failedFile: await failedFile.close(),
    elapsedMs: Date.now() - started,
    ...(error ? { error } : {}),
  };
  if (error) ctx.io.stderr(`error: ${error.message}\n`);
  return { json: summaryJson(summary), text: summaryText(summary), exitCode: error ? 1 : 0 };
}

function toStop(e: unknown, recorded: number, accepted: number): CreditStop {
  if (e instanceof CreditStop) return e;
  if (e instanceof Interrupted) {
    const pending = accepted - recorded;
    const more = pending > 0 ? ` (${pending} more accepted by the service, which still decides them)` : '';
    return new CreditStop('INTERRUPTED', `${e.message} after ${recorded} batches${more}; re-run the same command to finish`);
  }
  if (e instanceof CliError) return new CreditStop(e.code, e.message);
  const message = e instanceof Error ? e.message : String(e);
  return new CreditStop('INTERNAL_ERROR', `unexpected failure: ${message.split('\n')[0]}`);
}

/** Adds `credit` to the program (one line in program.ts). */
export function registerCreditCommand(
  program: Command,
  ctx: Context,
  run: (fn: () => Promise<CommandOutput>) => Promise<void>,
): void {
  program
    .command('credit')
    .description(
      'Credit points to accounts from a CSV (header "address,points") through the API, in batches, in file order. Re-running with the same file and --batch-size credits nothing twice (replayed rows are counted apart); failed rows go to <file>.failed.csv',
    )
    .requiredOption('--quest <questId>', 'quest id', parseRowId)
    .requiredOption('--key <apiKey>', "the quest owner's API key (sk_…)", parseApiKey)
    .requiredOption('--file <path>', 'CSV file: header line "address,points", then one credit per line')
    .option(
      '--batch-size <n>',
      `rows per batch, 1..${MAX_BATCH_SIZE}; a re-run of a file must use the size it was first credited with`,
      parseBatchSize,
      DEFAULT_BATCH_SIZE,
    )
    .option(
      '--concurrency <n>',
      `batches in flight (each sent once the service has queued the one before, so file order holds), 1..${MAX_CONCURRENCY}`,
      (v) => parseBoundedInt(v, '--concurrency', 1, MAX_CONCURRENCY),
      DEFAULT_CONCURRENCY,
    )
    .option('--base-url <url>', 'API address (default: API_BASE_URL, else http://127.0.0.1:3000)', parseBaseUrl)
    .option(
      '--stall-timeout <seconds>',
      'seconds a batch may show no progress before it is sent again with the same key',
      (v) => parseBoundedInt(v, '--stall-timeout', 1, 86_400),
      DEFAULT_STALL_TIMEOUT_SECONDS,
    )
    .option(
      '--stall-tries <n>',
      'times a batch may stall before the run stops with an error',
      (v) => parseBoundedInt(v, '--stall-tries', 1, 100),
      DEFAULT_STALL_TRIES,
    )
    .action((opts: CreditOptions) => run(() => creditCommand(ctx, opts)));
}
