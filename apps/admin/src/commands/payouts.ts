import { setTimeout as sleep } from 'node:timers/promises';
import { createQuestClient, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_RETRY, type QuestClient, QuestError } from '@quest/client';
import { CliError, type CommandOutput, type Context, EXIT } from '../context.ts';
import { openColumnsCsv } from '../csv.ts';
import { FailedRowsFile } from '../credit/failed-rows.ts';
import { Progress, type ProgressState } from '../credit/progress.ts';
import { checkAddressRow, checkPayoutRow, Occurrences, type ReversalTask, reversalKey } from '../reverse/plan.ts';
import {
  FAILED_COLUMNS,
  failedCells,
  type ReverseMode,
  ReverseStop,
  type Summary,
  summaryJson,
  summaryText,
  Tally,
} from '../reverse/report.ts';
import { interruptible, Interrupted } from './credit.ts';

/**
 * `quest-admin payouts reverse`: take back a list of payouts of one quest (`--file`, a CSV with a
 * `payout_id` column and an optional `points` one), or every payout of a list of addresses on it
 * (`--addresses`, a CSV with an `address` column), through the API, with @quest/client's `reverse`.
 *
 * - Each reversal carries an Idempotency-Key derived from the quest, the payout and the amount asked
 *   (reverse/plan.ts), so a re-run of the same input reverses nothing twice: what an earlier run
 *   reversed is replayed; a payout with nothing left answers PAYOUT_ALREADY_REVERSED — done, not failed.
 * - Up to --concurrency reversals in flight; each payout's reversals are independent of the others'.
 * - --addresses lists each address's payouts on the quest (GET /quests/{id}/payouts?address=) and
 *   reverses each one whole.
 * - Rows not reversed (invalid, PAYOUT_NOT_FOUND, REVERSAL_EXCEEDS_PAYOUT, IDEMPOTENCY_KEY_REUSED) go to
 *   `<file>.failed.csv`, in file order; a refusal that concerns every row (key, quest, feature flag) or
 *   an API unavailable through every retry stops the run.
 */

/** Payouts per page when listing an address's payouts. */
const LIST_PAGE = 1000;

export interface ReverseOptions {
  quest: number;
  key: string;
  file?: string;
  addresses?: string;
  reason?: string;
  baseUrl?: string;
  concurrency: number;
}

/** Rejections of one payout: the row fails, the run goes on. */
const ROW_CODES = new Set(['PAYOUT_NOT_FOUND', 'REVERSAL_EXCEEDS_PAYOUT', 'IDEMPOTENCY_KEY_REUSED', 'VALIDATION_FAILED']);

export async function reverseCommand(ctx: Context, opts: ReverseOptions): Promise<CommandOutput> {
  const started = Date.now();
  const mode: ReverseMode = opts.file !== undefined ? 'payouts' : 'addresses';
  const path = (opts.file ?? opts.addresses)!;
  const baseUrl = opts.baseUrl ?? ctx.config.API_BASE_URL;
  const progress = new Progress(ctx.io, 'reversing');
  const { signal, release } = interruptible();
  const failedFile = new FailedRowsFile(`${path}.failed.csv`, FAILED_COLUMNS[mode]);
  const tally = new Tally();
  const state: ProgressState = { size: 0, bytesDone: 0, rows: 0, succeeded: 0, failed: 0 };
  const settle = () => {
    state.rows = tally.rows;
    state.succeeded = tally.succeeded;
    state.failed = tally.failed;
    progress.update();
  };
  let error: ReverseStop | undefined;
  /** What stopped the run, as thrown. */
  let cause: unknown;
  const stopWith = (e: unknown) => {
    if (error) return;
    cause = signal.aborted ? signal.reason : e;
    error = toStop(cause);
  };

  try {
    const client = createQuestClient({ baseUrl, apiKey: opts.key, headers: { 'user-agent': 'quest-admin-reverse' } });
    const tasks =
      mode === 'payouts'
        ? await payoutTasks(path, opts.quest, tally, state)
        : await addressTasks(client, path, opts.quest, tally, state, signal);
    progress.start(state);
    const worker = async () => {
      while (error === undefined && !signal.aborted) {
        let next: IteratorResult<ReversalTask>;
        try {
          next = await tasks.next();
        } catch (e) {
          stopWith(e);
          return;
        }
        if (next.done) return;
        try {
          await reverseOne(client, next.value, opts, tally, signal);
        } catch (e) {
          stopWith(e);
        }
        settle();
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
    if (signal.aborted) stopWith(signal.reason);
  } catch (e) {
    stopWith(e);
  } finally {
    progress.stop();
    release();
  }
  // Nothing read or sent: a plain command failure (unreadable file, malformed header), reported by the runner.
  if (cause instanceof CliError && tally.rows === 0) throw cause;

  tally.failures.sort((a, b) => a.line - b.line);
  await failedFile.writeCells(tally.failures.map((f) => failedCells(mode, f)));
  const summary: Summary = {
    quest: opts.quest,
    mode,
    file: path,
    reason: opts.reason,
    tally,
    failedFile: await failedFile.close(),
    elapsedMs: Date.now() - started,
    ...(error ? { error } : {}),
  };
  if (error) ctx.io.stderr(`error: ${error.message}\n`);
  const exitCode = error ? EXIT.failed : tally.failed > 0 ? EXIT.rowsNotCredited : EXIT.ok;
  return { json: summaryJson(summary), text: summaryText(summary), exitCode };
}

/** --file: one reversal per valid row; invalid rows fail at once. */
async function payoutTasks(path: string, questId: number, tally: Tally, state: ProgressState) {
  const csv = await openColumnsCsv(path, { required: ['payout_id'], optional: ['points'] });
  state.size = csv.size;
  const occurrences = new Occurrences();
  return (async function* (): AsyncGenerator<ReversalTask> {
    for await (const row of csv.rows) {
      tally.rows++;
      state.bytesDone = row.bytes;
      const { payout_id, points } = row.cells;
      const check = checkPayoutRow({ payout_id, points });
      if (!check.ok) {
        tally.fail({ line: row.line, payoutId: payout_id, points, address: '', code: 'INVALID_ROW' }, false);
        continue;
      }
      const { payoutId, points: n } = check.value;
      yield {
        line: row.line,
        payoutId,
        points: n,
        key: reversalKey({ questId, payoutId, points: n, occurrence: occurrences.next(payoutId, n) }),
      };
    }
  })();
}

/** --addresses: every payout of each valid address on the quest, reversed whole. */
async function addressTasks(
  client: QuestClient,
  path: string,
  questId: number,
  tally: Tally,
  state: ProgressState,
  signal: AbortSignal,
) {
  const csv = await openColumnsCsv(path, { required: ['address'] });
  state.size = csv.size;
  return (async function* (): AsyncGenerator<ReversalTask> {
    for await (const row of csv.rows) {
      tally.rows++;
      state.bytesDone = row.bytes;
      const check = checkAddressRow(row.cells);
      if (!check.ok) {
        tally.fail({ line: row.line, payoutId: '', points: '', address: row.cells.address, code: 'INVALID_ROW' }, false);
        continue;
      }
      let found = 0;
      for (let offset = 0; ; offset += LIST_PAGE) {
        const page = await listPayouts(client, questId, check.value, offset, signal);
        for (const p of page) {
          found++;
          yield {
            line: row.line,
            payoutId: p.id,
            points: undefined,
            address: check.value,
            key: reversalKey({ questId, payoutId: p.id, points: undefined, occurrence: 0 }),
          };
        }
        if (page.length < LIST_PAGE) break;
      }
      if (found === 0) tally.addressesWithoutPayouts++;
    }
  })();
}

/**
 * A page of an address's payouts on the quest (GET /quests/{questId}/payouts?address=), through the
 * client's typed `raw` calls: transport errors, 429 and 5xx retried with backoff (honouring
 * Retry-After) up to the client's default attempts, a 4xx thrown as the client would.
 */
async function listPayouts(
  client: QuestClient,
  questId: number,
  address: string,
  offset: number,
  signal: AbortSignal,
): Promise<{ id: string; amount: number; reversed_amount: number }[]> {
  for (let attempt = 1; ; attempt++) {
    let status: number | undefined;
    let retryAfterMs: number | undefined;
    let cause: unknown;
    try {
      const { data, error, response } = await client.raw.GET('/quests/{questId}/payouts', {
        params: { path: { questId }, query: { address, limit: LIST_PAGE, offset } },
        signal: AbortSignal.any([signal, AbortSignal.timeout(DEFAULT_REQUEST_TIMEOUT_MS)]),
      });
      if (data) return data.payouts;
      status = response.status;
      const envelope = (error ?? {}) as { code?: string; message?: string; details?: unknown };
      const retryable = status === 429 || status >= 500;
      const seconds = Number(response.headers.get('retry-after'));
      if (Number.isFinite(seconds) && seconds > 0) retryAfterMs = seconds * 1000;
      if (!retryable || attempt >= DEFAULT_RETRY.maxAttempts)
        throw new QuestError((envelope.code ?? 'BAD_RESPONSE') as 'BAD_RESPONSE', envelope.message ?? response.statusText, {
          status,
          details: envelope.details,
          retryable,
          attempts: attempt,
        });
    } catch (e) {
      if (e instanceof QuestError || signal.aborted) throw e;
      cause = e;
      if (attempt >= DEFAULT_RETRY.maxAttempts)
        throw new QuestError('NETWORK_ERROR', `listing the payouts of ${address}: ${(e as Error).message}`, {
          retryable: true,
          attempts: attempt,
          cause,
        });
    }
    const base = Math.min(DEFAULT_RETRY.maxDelayMs, DEFAULT_RETRY.baseDelayMs * 2 ** (attempt - 1));
    await sleep(Math.max(retryAfterMs ?? 0, Math.round(base * (0.5 + Math.random() / 2))), undefined, { signal });
  }
}

async function reverseOne(
  client: QuestClient,
  task: ReversalTask,
  opts: ReverseOptions,
  tally: Tally,
  signal: AbortSignal,
): Promise<void> {
  const failed = (code: string) => ({
    line: task.line,
    payoutId: task.payoutId,
    points: task.points === undefined ? '' : String(task.points),
    address: task.address ?? '',
    code,
  });
  try {
    const out = await client.reverse({
      questId: opts.quest,
      payoutId: task.payoutId,
      ...(task.points === undefined ? {} : { points: task.points }),
      ...(opts.reason === undefined ? {} : { reason: opts.reason }),
      idempotencyKey: task.key,
      signal,
    });
    if (out.kind === 'reversal') tally.reversal(out.reversal.amount, out.replayed);
    else if (out.code === 'PAYOUT_ALREADY_REVERSED') tally.done();
    else tally.fail(failed(out.code), true);
  } catch (e) {
    if (e instanceof QuestError && e.status !== undefined && e.status < 500 && ROW_CODES.has(e.code)) {
      tally.fail(failed(e.code), true);
      return;
    }
    throw e;
  }
}

function toStop(e: unknown): ReverseStop {
  if (e instanceof ReverseStop) return e;
  if (e instanceof Interrupted) return new ReverseStop('INTERRUPTED', `${e.message}; re-run the same command to finish`);
  if (e instanceof QuestError) {
    const refused = e.status !== undefined && e.status < 500 && !e.retryable;
    return new ReverseStop(
      refused ? e.code : e.code === 'NETWORK_ERROR' || e.status !== undefined ? 'API_UNAVAILABLE' : e.code,
      refused ? `the API refused with ${e.status} ${e.code}: ${e.message}` : `the API did not answer: ${e.message}`,
    );
  }
  if (e instanceof CliError) return new ReverseStop(e.code, e.message);
  const message = e instanceof Error ? e.message : String(e);
  return new ReverseStop('INTERNAL_ERROR', `unexpected failure: ${message.split('\n')[0]}`);
}
