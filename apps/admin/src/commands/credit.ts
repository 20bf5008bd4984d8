import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import cliProgress from 'cli-progress';
import { type Command, InvalidArgumentError } from 'commander';
import { stringify } from 'csv-stringify';
import { z } from 'zod';
import { parseApiKey, parseRowId } from '../args.ts';
import { CliError, type CommandOutput, type Context, type Io } from '../context.ts';
import { type CreditCsvRow, openCreditCsv } from '../csv.ts';
import { plural, renderFields } from '../format.ts';

/**
 * `quest-admin credit`: credit the rows of a CSV (`address,points`) to one quest through the API's
 * batch endpoint, in file order, exactly once per row however often the command is re-run.
 *
 * How it stays exactly-once and in order:
 * - Pass 1 streams the file once to hash its bytes (SHA-256) and count its rows; nothing is sent
 *   before the whole file is known to parse (a malformed CSV credits nothing).
 * - Pass 2 streams it again. Rows are validated locally (address 0x + 40 hex digits; points a
 *   positive safe integer). Invalid rows are set aside BEFORE batching, so batches consist of the
 *   valid rows only, in file order, cut every --batch-size rows: the same file and batch size give
 *   the same batches on every run.
 * - Each batch carries an Idempotency-Key derived from the file's digest, the quest and the
 *   ordinal of the batch's first row (= index × batch size). The service stores every batch under
 *   its key: a re-run replays completed batches (their stored results, nothing credited again),
 *   resumes a half-done one, and sends the rest. Re-running with a DIFFERENT batch size collides
 *   on batch 1 (same key, other rows) and stops with IDEMPOTENCY_KEY_REUSED instead of crediting
 *   the file a second time.
 * - Batches are sent strictly one after another: batch i+1 is POSTed only once batch i is
 *   completed. The service decides a quest's batches in the order they are enqueued; a second
 *   batch in flight (allowed after a 202) would gain little — the 202 case means the queue is the
 *   bottleneck — and would break file order when batch i then fails and has to be resumed behind
 *   batch i+1. What does overlap is local work: the next batch is read and validated from the file
 *   while the current one is on the wire.
 * - 202 answers are followed on the Location URL until completed, collecting results in pages of
 *   1,000. 5xx (QUEUE_UNAVAILABLE, ALLOCATION_FAILED, …), 429, timeouts and network errors are
 *   retried with exponential backoff, which is safe because of the key. Any other 4xx stops the run.
 */

export const DEFAULT_BATCH_SIZE = 5000;
export const MAX_BATCH_SIZE = 10_000;
/** Results per page when following a 202 (the API's maximum). */
export const RESULTS_PAGE_SIZE = 1000;
/** Attempts per request (and resumes per batch) before the run gives up. */
export const MAX_ATTEMPTS = 8;
/** One request; the API itself holds a batch POST for up to BATCH_WAIT_MS (30 s by default). */
const REQUEST_TIMEOUT_MS = 120_000;
const PROGRESS_INTERVAL_MS = 2000;
/** Never change: a new scheme would give every batch a new key and credit old files again. */
const KEY_SCHEME = 'quest-admin-credit-v1';

// ---------------------------------------------------------------------------------------------
// Pure helpers

export function parseBatchSize(value: string): number {
  const text = value.trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_BATCH_SIZE)) throw new InvalidArgumentError(`Expected an integer from 1 to ${MAX_BATCH_SIZE}.`);
  return n;
}

function parseBoundedInt(value: string, name: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new InvalidArgumentError(`${name} takes a whole number from ${min} to ${max}`);
  return Number(value);
}

export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new InvalidArgumentError('Expected an http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError('Expected an http:// or https:// URL.');
  if (url.search || url.hash) throw new InvalidArgumentError('Expected a base URL without a query or fragment.');
  return url.toString().replace(/\/+$/, '');
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export type RowCheck = { ok: true; points: number } | { ok: false; reason: string };

/**
 * The checks the API's batch validation makes on one item, made locally: `0x` + 40 hex digits in
 * any letter case (the service checksums it), and points a positive integer that is exact as a
 * JSON number. Written digits only: `1e3`, `1.0`, `+5`, `0x10` are refused rather than guessed.
 */
export function checkCreditRow(row: { address: string; points: string }): RowCheck {
  if (!ADDRESS.test(row.address)) return { ok: false, reason: 'address must be 0x followed by 40 hexadecimal digits' };
  if (!/^\d+$/.test(row.points)) return { ok: false, reason: 'points must be a positive integer' };
  const points = Number(row.points);
  if (points < 1) return { ok: false, reason: 'points must be at least 1' };
  if (!Number.isSafeInteger(points)) return { ok: false, reason: `points must be at most ${Number.MAX_SAFE_INTEGER}` };
  return { ok: true, points };
}

/**
 * Idempotency-Key of a batch: the file's SHA-256, the quest and the ordinal (among valid rows) of
 * the batch's first row. The batch size enters only through that ordinal, so batch 1 has the same
 * key whatever the size: a re-run with another size is refused by the service (same key, other
 * rows) rather than crediting the file twice.
 */
export function batchIdempotencyKey(k: { fileSha256: string; questId: number; batchSize: number; index: number }): string {
  return `${KEY_SCHEME}:${k.fileSha256}:q${k.questId}:r${k.index * k.batchSize}`;
}

export interface CreditItem {
  line: number;
  /** As in the file (trimmed); sent as is, the service checksums it. */
  address: string;
  points: number;
  /** The points cell as in the file, for the failed-rows CSV. */
  pointsText: string;
}

export interface FailedRow {
  line: number;
  address: string;
  points: string;
  code: string;
}

export interface PlannedBatch {
  index: number;
  /** Valid rows, in file order; empty only for the last yield when invalid rows trail the last batch. */
  items: CreditItem[];
  /** Invalid rows met since the previous batch (lines before this batch's last row), in file order. */
  invalid: FailedRow[];
}

/**
 * Cut the valid rows into batches of `batchSize`, setting invalid rows aside (code INVALID_ROW)
 * first, so numbering depends only on the file. Holds one batch at a time.
 */
export async function* planBatches(rows: AsyncIterable<CreditCsvRow>, batchSize: number): AsyncGenerator<PlannedBatch> {
  let index = 0;
  let items: CreditItem[] = [];
  let invalid: FailedRow[] = [];
  for await (const row of rows) {
    const check = checkCreditRow(row);
    if (!check.ok) {
      invalid.push({ line: row.line, address: row.address, points: row.points, code: 'INVALID_ROW' });
      continue;
    }
    items.push({ line: row.line, address: row.address, points: check.points, pointsText: row.points });
    if (items.length === batchSize) {
      yield { index: index++, items, invalid };
      items = [];
      invalid = [];
    }
  }
  if (items.length > 0 || invalid.length > 0) yield { index, items, invalid };
}

/** Delay before retry `attempt` (1-based): exponential from 250 ms, capped at 8 s, jittered; at least Retry-After. */
export function backoffMs(attempt: number, retryAfterMs = 0, random: () => number = Math.random): number {
  const base = Math.min(8000, 250 * 2 ** (attempt - 1));
  return Math.min(30_000, Math.max(retryAfterMs, Math.round(base * (0.5 + random() / 2))));
}

/** Merge two lists already in line order. */
export function mergeByLine(a: readonly FailedRow[], b: readonly FailedRow[]): FailedRow[] {
  const out: FailedRow[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.line <= b[j]!.line)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
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

const fmt = (n: number) => n.toLocaleString('en-US');

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

// ---------------------------------------------------------------------------------------------
// The API

/** Why the run stopped; `code` is the API's error code where there is one. */
class CreditStop extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

/** A failure worth retrying with the same Idempotency-Key: 5xx, 429, timeout, network. */
class Transient extends Error {
  constructor(
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message);
  }
}

/** A 4xx (other than 408/429): the request as sent will never succeed. */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }
}

const resultSchema = z.object({
  index: z.number().int().nonnegative(),
  status: z.enum(['completed', 'rejected']),
  error: z.object({ code: z.string() }).optional(),
});
type BatchItemResult = z.infer<typeof resultSchema>;
const batchAnswerSchema = z.object({
  batch: z.object({
    id: z.string(),
    status: z.enum(['pending', 'processing', 'completed', 'failed']),
    total: z.number().int(),
    processed: z.number().int(),
    updated_at: z.string().optional(),
    results: z.array(resultSchema).optional(),
  }),
});
type BatchAnswer = z.infer<typeof batchAnswerSchema>['batch'];

function describeNetworkError(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e.message} (${cause})` : String(e?.message ?? error);
}

class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    readonly signal: AbortSignal,
    readonly onRetry: (message: string) => void = () => {},
  ) {}

  /** One attempt. Resolves with a 2xx answer; throws Transient, Refused, or the abort reason. */
  private async once(method: 'GET' | 'POST', url: string, body?: string, headers: Record<string, string> = {}) {
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        body,
        headers: {
          accept: 'application/json',
          'user-agent': 'quest-admin-credit',
          'x-api-key': this.apiKey,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
      text = await res.text();
    } catch (error) {
      if (this.signal.aborted) throw this.signal.reason;
      throw new Transient(`${method} ${url}: ${describeNetworkError(error)}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (res.status >= 200 && res.status < 300) {
      if (json === undefined)
        throw new CreditStop('BAD_RESPONSE', `${method} ${url}: ${res.status} with a body that is not JSON`);
      return { status: res.status, headers: res.headers, json };
    }
    const envelope = (json ?? {}) as { code?: unknown; message?: unknown; details?: unknown };
    const code = typeof envelope.code === 'string' ? envelope.code : `HTTP_${res.status}`;
    const message = typeof envelope.message === 'string' ? envelope.message : text.slice(0, 200) || res.statusText;
    if (res.status >= 500 || res.status === 429 || res.status === 408) {
      const retryAfter = Number(res.headers.get('retry-after'));
      throw new Transient(`${res.status} ${code}: ${message}`, Number.isFinite(retryAfter) ? retryAfter * 1000 : 0);
    }
    throw new Refused(res.status, code, message, envelope.details);
  }

  /** With bounded retries of transient failures; `label` names the request in the final error. */
  async request(label: string, method: 'GET' | 'POST', url: string, body?: string, headers?: Record<string, string>) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(method, url, body, headers);
      } catch (error) {
        if (!(error instanceof Transient)) throw error;
        if (attempt >= MAX_ATTEMPTS)
          throw new CreditStop('API_UNAVAILABLE', `${label}: gave up after ${MAX_ATTEMPTS} attempts; last: ${error.message}`);
        const delay = backoffMs(attempt, error.retryAfterMs);
        this.onRetry(`${label}: ${error.message}; retry ${attempt} of ${MAX_ATTEMPTS - 1} in ${(delay / 1000).toFixed(1)} s`);
        await sleep(delay, undefined, { signal: this.signal });
      }
    }
  }

  /** An API path under the base URL (which may carry a path prefix). */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  /** A Location header (absolute, or relative to the base URL's origin, as HTTP has it) with a results page. */
  page(location: string, offset: number): string {
    const url = new URL(location, `${this.baseUrl}/`);
    url.searchParams.set('limit', String(RESULTS_PAGE_SIZE));
    url.searchParams.set('offset', String(offset));
    return url.toString();
  }
}

function parseAnswer(json: unknown, what: string): BatchAnswer {
  const parsed = batchAnswerSchema.safeParse(json);
  if (!parsed.success) throw new CreditStop('BAD_RESPONSE', `${what}: unexpected answer from the API`);
  return parsed.data.batch;
}

/**
 * Send one batch and collect one result per item, in item order: POST (retried), then on a 202
 * follow the Location, paging results as they are decided; a batch the service reports failed is
 * POSTed again with the same key, which resumes it after its last committed chunk.
 */
async function creditBatch(
  api: Api,
  questId: number,
  key: string,
  items: readonly CreditItem[],
  label: string,
  onProcessed: (n: number) => void,
  stall: StallPolicy,
): Promise<BatchItemResult[]> {
  const body = JSON.stringify({ allocations: items.map((i) => ({ address: i.address, points: i.points })) });
  const postUrl = api.url(`/quests/${questId}/batches`);
  const post = async () => {
    const res = await api.request(label, 'POST', postUrl, body, { 'idempotency-key': key });
    const answer = parseAnswer(res.json, label);
    const location = res.headers.get('location') ?? `/quests/${questId}/batches/${answer.id}`;
    return { answer, location };
  };
  const results: BatchItemResult[] = [];
  let { answer, location } = await post();
  let resumes = 0;
  let delay = 100;
  // A batch that shows no progress (processed, status, last touched) for stall.timeoutMs is
  // POSTed again with the same key, which resumes it or lets the service re-drive it; after
  // stall.tries such tries the run stops instead of waiting forever.
  let mark = '';
  let markedAt = Date.now();
  let stalls = 0;
  for (;;) {
    const now = Date.now();
    const seen = `${answer.status}|${answer.processed}|${answer.updated_at ?? ''}|${results.length}`;
    if (seen !== mark) {
      mark = seen;
      markedAt = now;
    } else if (answer.status !== 'completed' && answer.status !== 'failed' && now - markedAt >= stall.timeoutMs) {
      const idle = `no progress for ${formatDuration(now - markedAt)}`;
      if (++stalls >= stall.tries)
        throw new CreditStop('STALLED', `${label}: ${idle}, ${stalls} times; giving up (re-run the same command to finish it)`);
      api.onRetry(`${label}: ${idle}; sending it again (${stalls} of ${stall.tries - 1})`);
      ({ answer, location } = await post());
      markedAt = Date.now();
      continue;
    }
    if (answer.total !== items.length)
      throw new CreditStop('BAD_RESPONSE', `${label}: the API reports ${answer.total} items, ${items.length} were sent`);
    for (const r of answer.results ?? []) {
      if (r.index === results.length) results.push(r);
      else if (r.index > results.length) break; // a gap: fetch from results.length again
    }
    onProcessed(Math.max(results.length, Math.min(answer.processed, items.length)));
    if (answer.status === 'completed' && results.length >= items.length) return results;
    if (answer.status === 'failed') {
      if (++resumes >= MAX_ATTEMPTS) throw new CreditStop('ALLOCATION_FAILED', `${label}: failed ${resumes} times; giving up`);
      await sleep(backoffMs(resumes), undefined, { signal: api.signal });
      ({ answer, location } = await post());
      continue;
    }
    if (answer.status !== 'completed') {
      await sleep(delay, undefined, { signal: api.signal });
      delay = Math.min(2000, Math.round(delay * 1.5));
    }
    answer = parseAnswer((await api.request(label, 'GET', api.page(location, results.length))).json, label);
  }
}

// ---------------------------------------------------------------------------------------------
// Output: failed rows, progress

/** `<input>.failed.csv`, written through a temporary file and renamed at the end of the run. */
class FailedRowsFile {
  private stringifier: ReturnType<typeof stringify> | undefined;
  private done: Promise<void> | undefined;
  readonly tmpPath: string;

  constructor(readonly path: string) {
    this.tmpPath = `${path}.tmp`;
  }

  async write(rows: readonly FailedRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (!this.stringifier) {
      this.stringifier = stringify({ header: true, columns: ['line', 'address', 'points', 'code'] });
      const out = createWriteStream(this.tmpPath);
      this.stringifier.pipe(out);
      this.done = finished(out);
      this.done.catch(() => {}); // observed in close()
    }
    for (const row of rows) {
      if (!this.stringifier.write([row.line, row.address, row.points, row.code])) {
        // A failed write stream never drains: its error ends the wait instead.
        await Promise.race([once(this.stringifier, 'drain'), this.done]);
      }
    }
  }

  /** Publish the file if anything failed (else remove a stale one from an earlier run); its path or null. */
  async close(): Promise<string | null> {
    if (!this.stringifier) {
      await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      return null;
    }
    this.stringifier.end();
    await this.done;
    await rename(this.tmpPath, this.path);
    return this.path;
  }
}

interface ProgressState {
  done: number;
  total: number;
  succeeded: number;
  failed: number;
}

/** A cli-progress bar on a TTY; otherwise one line on stderr every ~2 s. Never writes to stdout. */
class Progress {
  private bar: cliProgress.SingleBar | undefined;
  private timer: NodeJS.Timeout | undefined;
  private line: () => string = () => '';
  private started = Date.now();

  constructor(private readonly io: Io) {}

  private begin(format: string, total: number, line: () => string): void {
    this.stop();
    this.started = Date.now();
    this.line = line;
    if (this.io.interactive) {
      this.bar = new cliProgress.SingleBar(
        { format, hideCursor: true, clearOnComplete: true, etaBuffer: 50, fps: 5 },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(Math.max(total, 1), 0, { rate: '0', etaText: '?', succeeded: '0', failed: '0' });
    } else {
      this.timer = setInterval(() => this.io.stderr(`${this.line()}\n`), PROGRESS_INTERVAL_MS);
      this.timer.unref();
    }
  }

  scanning(file: string, size: number, bytesRead: () => number): void {
    const mb = (n: number) => (n / 1_048_576).toFixed(1);
    this.begin('scanning  |{bar}| {percentage}%', size, () => {
      const read = bytesRead();
      return `scanning ${file}: ${size ? Math.floor((100 * read) / size) : 100}% (${mb(read)} of ${mb(size)} MB)`;
    });
  }

  scanned(bytes: number): void {
    this.bar?.update(bytes);
  }

  crediting(state: ProgressState): void {
    this.begin(
      'crediting |{bar}| {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {etaText} | {succeeded} ok, {failed} failed',
      state.total,
      () => {
        const { rate, eta } = this.speed(state);
        const pct = state.total ? Math.floor((100 * state.done) / state.total) : 100;
        return `crediting: ${fmt(state.done)}/${fmt(state.total)} rows (${pct}%), ${fmt(state.succeeded)} succeeded, ${fmt(state.failed)} failed, ${fmt(rate)} rows/s, ETA ${eta}`;
      },
    );
  }

  private speed(state: ProgressState): { rate: number; eta: string } {
    const seconds = (Date.now() - this.started) / 1000;
    const rate = seconds > 0 ? Math.round(state.done / seconds) : 0;
    return { rate, eta: rate > 0 ? formatDuration(((state.total - state.done) / rate) * 1000) : '?' };
  }

  credited(state: ProgressState): void {
    if (!this.bar) return;
    const { rate, eta } = this.speed(state);
    this.bar.update(state.done, { rate: fmt(rate), etaText: eta, succeeded: fmt(state.succeeded), failed: fmt(state.failed) });
  }

  /** A line of its own (a retry notice), above the bar when there is one. */
  notice(text: string): void {
    if (this.bar) {
      process.stderr.write(`\r\x1b[2K${text}\n`);
      this.bar.render();
    } else this.io.stderr(`${text}\n`);
  }

  stop(): void {
    this.bar?.stop();
    this.bar = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The command

export interface CreditOptions {
  quest: number;
  key: string;
  file: string;
  batchSize: number;
  baseUrl?: string;
  /** Seconds a batch may show no progress before it is sent again. */
  stallTimeout: number;
  /** Stalls of one batch before the run stops. */
  stallTries: number;
}

interface StallPolicy {
  timeoutMs: number;
  tries: number;
}

export const DEFAULT_STALL_TIMEOUT_SECONDS = 60;
export const DEFAULT_STALL_TRIES = 3;

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

const linesOf = (items: readonly CreditItem[]) =>
  items.length ? `CSV lines ${fmt(items[0]!.line)}–${fmt(items[items.length - 1]!.line)}` : 'no rows';

export async function creditCommand(ctx: Context, opts: CreditOptions): Promise<CommandOutput> {
  const started = Date.now();
  const baseUrl = opts.baseUrl ?? ctx.config.API_BASE_URL;
  const progress = new Progress(ctx.io);
  const { signal, release } = interruptible();
  const failedFile = new FailedRowsFile(`${opts.file}.failed.csv`);
  const summary = { total: 0, succeeded: 0, failed: 0, batches: 0 };
  const byCode = new Map<string, number>();
  let plannedBatches = 0;
  let error: CreditStop | undefined;
  let batches: AsyncGenerator<PlannedBatch> | undefined;

  const recordFailures = async (rows: readonly FailedRow[]) => {
    for (const row of rows) byCode.set(row.code, (byCode.get(row.code) ?? 0) + 1);
    summary.failed += rows.length;
    await failedFile.write(rows);
  };

  try {
    // Pass 1: digest, row count and batch count; a CSV that does not parse fails here (exit 1), before anything is sent.
    const scan = await openCreditCsv(opts.file);
    progress.scanning(opts.file, scan.size, scan.bytesRead);
    let rows = 0;
    let valid = 0;
    for await (const row of scan.rows) {
      rows++;
      if (checkCreditRow(row).ok) valid++;
      if ((rows & 0x3fff) === 0) {
        progress.scanned(scan.bytesRead());
        if (signal.aborted) throw signal.reason;
      }
    }
    const fileSha256 = scan.sha256();
    plannedBatches = Math.ceil(valid / opts.batchSize);
    summary.total = rows;

    // Pass 2: batches in file order, one at a time; the next one is read while the current one is sent.
    const api = new Api(baseUrl, opts.key, signal, (message) => progress.notice(`warning: ${message}`));
    const csv = await openCreditCsv(opts.file);
    const state: ProgressState = { done: 0, total: rows, succeeded: 0, failed: 0 };
    progress.crediting(state);
    batches = planBatches(csv.rows, opts.batchSize);
    let next = batches.next();
    for (;;) {
      const step = await next;
      if (step.done) break;
      const batch = step.value;
      next = batches.next();
      next.catch(() => {}); // awaited on the next turn; do not let it count as unhandled meanwhile
      if (signal.aborted) throw signal.reason;
      const rejected: FailedRow[] = [];
      if (batch.items.length > 0) {
        const label = `batch ${fmt(batch.index + 1)} of ${fmt(plannedBatches)} (${linesOf(batch.items)})`;
        const key = batchIdempotencyKey({ fileSha256, questId: opts.quest, batchSize: opts.batchSize, index: batch.index });
        const before = state.done + batch.invalid.length;
        let results: BatchItemResult[];
        try {
          results = await creditBatch(
            api,
            opts.quest,
            key,
            batch.items,
            label,
            (n) => {
              state.done = before + n;
              progress.credited(state);
            },
            { timeoutMs: opts.stallTimeout * 1000, tries: opts.stallTries },
          );
        } catch (e) {
          if (!(e instanceof Refused)) throw e;
          const at = e.code === 'VALIDATION_FAILED' ? itemIndexFromDetails(e.details) : undefined;
          const line = at === undefined ? undefined : batch.items[at]?.line;
          const hint =
            e.code === 'IDEMPOTENCY_KEY_REUSED'
              ? ' — this file was sent to this quest before with a different --batch-size; re-run with the original one'
              : e.code === 'BATCH_TOO_LARGE' || e.code === 'PAYLOAD_TOO_LARGE'
                ? ' — use a smaller --batch-size'
                : '';
          const where = line === undefined ? '' : ` (CSV line ${fmt(line)})`;
          throw new CreditStop(e.code, `${label} was refused with ${e.status} ${e.code}${where}: ${e.message}${hint}`, line);
        }
        for (const [k, r] of results.entries()) {
          if (r.status === 'completed') summary.succeeded++;
          else {
            const item = batch.items[k]!;
            rejected.push({ line: item.line, address: item.address, points: item.pointsText, code: r.error?.code ?? 'REJECTED' });
          }
        }
        summary.batches++;
      }
      await recordFailures(mergeByLine(batch.invalid, rejected));
      state.done = summary.succeeded + summary.failed;
      state.succeeded = summary.succeeded;
      state.failed = summary.failed;
      progress.credited(state);
    }
    if (csv.sha256() !== fileSha256 || state.done !== rows) {
      throw new CreditStop(
        'FILE_CHANGED',
        `${opts.file} changed while it was being credited; what was sent is recorded under the first version's keys — check the quest before re-running`,
      );
    }
  } catch (e) {
    // Nothing sent: a plain command failure (unreadable file, malformed CSV), reported by the runner.
    if (e instanceof CliError && summary.batches === 0 && summary.failed === 0) throw e;
    error = toStop(signal.aborted ? signal.reason : e, summary.batches, plannedBatches);
  } finally {
    progress.stop();
    release();
    void batches?.return(undefined).catch(() => {});
  }

  const failedPath = await failedFile.close();
  const elapsedMs = Date.now() - started;
  const json: Record<string, unknown> = {
    quest: opts.quest,
    file: opts.file,
    batches: summary.batches,
    total: summary.total,
    succeeded: summary.succeeded,
    failed: summary.failed,
    failedFile: failedPath,
    elapsedMs,
  };
  const rate = elapsedMs > 0 ? Math.round((summary.succeeded + summary.failed) / (elapsedMs / 1000)) : 0;
  const failedText = [...byCode].map(([code, n]) => `${code} ${fmt(n)}`).join(', ');
  const fields: [string, string | number][] = [
    ['batches', `${fmt(summary.batches)} of ${fmt(plannedBatches)} (up to ${plural(opts.batchSize, 'row')} each)`],
    ['total', fmt(summary.total)],
    ['succeeded', fmt(summary.succeeded)],
    ['failed', summary.failed ? `${fmt(summary.failed)} (${failedText})` : '0'],
    ['failed rows', failedPath ?? '-'],
    ['elapsed', `${(elapsedMs / 1000).toFixed(1)} s`],
    ['rate', `${fmt(rate)} rows/s`],
  ];
  const title = error
    ? `Credit of ${opts.file} to quest ${opts.quest} stopped after ${plural(summary.batches, 'batch', 'batches')} of ${fmt(plannedBatches)}`
    : `Credited ${opts.file} to quest ${opts.quest}`;
  let text = renderFields(title, fields);
  if (error) {
    json.error = { code: error.code, message: error.message, ...(error.line === undefined ? {} : { line: error.line }) };
    ctx.io.stderr(`error: ${error.message}\n`);
    text += `\n\nRe-run the same command (same file, same --batch-size) to finish: completed batches are not credited again.`;
  }
  return { json, text, exitCode: error ? 1 : 0 };
}

function toStop(e: unknown, sent: number, planned: number): CreditStop {
  if (e instanceof CreditStop) return e;
  if (e instanceof Interrupted)
    return new CreditStop('INTERRUPTED', `${e.message} after ${sent} of ${planned} batches; re-run the same command to finish`);
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
      'Credit points to accounts from a CSV (header "address,points") through the API, in batches, in file order. Re-running with the same file and batch size credits nothing twice; failed rows go to <file>.failed.csv',
    )
    .requiredOption('--quest <questId>', 'quest id', parseRowId)
    .requiredOption('--key <apiKey>', "the quest owner's API key (sk_…)", parseApiKey)
    .requiredOption('--file <path>', 'CSV file: header line "address,points", then one credit per line')
    .option('--batch-size <n>', `rows per batch, 1..${MAX_BATCH_SIZE}`, parseBatchSize, DEFAULT_BATCH_SIZE)
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
