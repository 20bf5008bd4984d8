import cliProgress from 'cli-progress';
import type { Io } from '../context.ts';

/** The progress of a run on stderr: a cli-progress bar on a TTY, else a line every ~2 s. Never stdout. */

const PROGRESS_INTERVAL_MS = 2000;

export const fmt = (n: number) => n.toLocaleString('en-US');

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '?';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

export interface ProgressState {
  /** File size, and bytes of the file whose rows are decided (the row count is known only at the end). */
  size: number;
  bytesDone: number;
  /** Rows decided (credited, rejected or invalid). */
  rows: number;
  succeeded: number;
  failed: number;
}

/**
 * Rows per second since the start, and the time left, from the share of the FILE done: one pass
 * over the file means the row count is unknown until the end, its size is not.
 */
export function speed(s: ProgressState, elapsedMs: number): { rate: number; etaMs: number } {
  const seconds = elapsedMs / 1000;
  const rate = seconds > 0 ? Math.round(s.rows / seconds) : 0;
  const share = s.size > 0 ? Math.min(1, s.bytesDone / s.size) : 0;
  const etaMs = share > 0 ? (elapsedMs * (1 - share)) / share : Number.POSITIVE_INFINITY;
  return { rate, etaMs };
}

export function progressLine(s: ProgressState, elapsedMs: number, verb = 'crediting'): string {
  const { rate, etaMs } = speed(s, elapsedMs);
  const pct = s.size ? Math.floor((100 * Math.min(s.bytesDone, s.size)) / s.size) : 100;
  return `${verb}: ${pct}% of the file, ${fmt(s.rows)} rows (${fmt(s.succeeded)} succeeded, ${fmt(s.failed)} failed), ${fmt(rate)} rows/s, ETA ${formatDuration(etaMs)}`;
}

export class Progress {
  private bar: cliProgress.SingleBar | undefined;
  private timer: NodeJS.Timeout | undefined;
  private started = Date.now();
  private state: ProgressState | undefined;

  /** `verb` names the work on the bar and the lines ('crediting', 'reversing'). */
  constructor(
    private readonly io: Io,
    private readonly verb = 'crediting',
  ) {}

  start(state: ProgressState): void {
    this.stop();
    this.started = Date.now();
    this.state = state;
    if (this.io.interactive) {
      this.bar = new cliProgress.SingleBar(
        {
          format: `${this.verb} |{bar}| {percentage}% | {rows} rows | {rate} rows/s | ETA {etaText} | {succeeded} ok, {failed} failed`,
          hideCursor: true,
          clearOnComplete: true,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(Math.max(state.size, 1), 0, { rows: '0', rate: '0', etaText: '?', succeeded: '0', failed: '0' });
    } else {
      this.timer = setInterval(
        () => this.io.stderr(`${progressLine(state, Date.now() - this.started, this.verb)}\n`),
        PROGRESS_INTERVAL_MS,
      );
      this.timer.unref();
    }
  }

  /** The state changed (the object given to start()). */
  update(): void {
    const s = this.state;
    if (!this.bar || !s) return;
    const { rate, etaMs } = speed(s, Date.now() - this.started);
    this.bar.update(Math.min(s.bytesDone, s.size), {
      rows: fmt(s.rows),
      rate: fmt(rate),
      etaText: formatDuration(etaMs),
      succeeded: fmt(s.succeeded),
      failed: fmt(s.failed),
    });
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
