import { fmt, part } from './format.ts';

/** What the console answers about a batch while a quest page follows it (console/pages/batches.ts). */
interface BatchStatus {
  batch: { id: string; status: string; total: number; processed: number; succeeded: number; failed: number };
  quest: { id: number; points_remaining: number; total_points: number };
  /** Once the batch is done: the quest page's charts and recent payouts, rendered anew. */
  views?: { charts: string; payouts: string };
}

const POLL_MS = 400;
const RETRY_MS = 2000;

function updateRemaining(quest: BatchStatus['quest']): void {
  for (const m of document.querySelectorAll<HTMLMeterElement>(`meter[data-quest="${quest.id}"]`))
    m.value = quest.points_remaining;
  for (const el of document.querySelectorAll(`[data-remaining-of="${quest.id}"]`)) el.textContent = fmt(quest.points_remaining);
}

/** The page's charts and recent payouts, replaced by those the server rendered once the batch ended. */
function refreshViews(views: BatchStatus['views']): void {
  if (!views) return;
  const charts = document.getElementById('quest-charts');
  const payouts = document.getElementById('payout-results');
  if (charts) charts.innerHTML = views.charts;
  if (payouts) payouts.innerHTML = views.payouts;
}

function show(row: HTMLElement, body: BatchStatus): boolean {
  const b = body.batch;
  const bar = part(row, 'progress', HTMLProgressElement);
  bar.max = b.total;
  bar.value = b.processed;
  part(row, '[data-batch-text]', HTMLElement).textContent =
    `${fmt(b.processed)} of ${fmt(b.total)} processed, ${fmt(b.succeeded)} credited, ${fmt(b.failed)} failed`;
  const status = part(row, '[data-batch-status]', HTMLElement);
  status.textContent = b.status;
  status.className = `status-${b.status}`;
  updateRemaining(body.quest);
  if (b.status !== 'completed' && b.status !== 'failed') return false;
  row.removeAttribute('data-batch-url');
  const failedLink = row.querySelector<HTMLAnchorElement>('[data-failed-link]');
  if (failedLink && b.failed > 0) failedLink.hidden = false;
  refreshViews(body.views);
  // Last: tests and people wait for this mark, by when the page shows the batch's effect.
  row.setAttribute('data-batch-done', b.status);
  return true;
}

/**
 * Follow a batch row (`data-batch-url`) until its batch ends: its progress, the quest's remaining
 * points, then the charts and recent payouts. The page's query (chart period, address searched)
 * goes with each poll, so the views come back as the page shows them.
 */
export function watchBatch(row: HTMLElement): void {
  const url = `${row.getAttribute('data-batch-url')}${window.location.search}`;
  const text = part(row, '[data-batch-text]', HTMLElement);
  const tick = async (): Promise<void> => {
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      // A refusal (the session ended, the batch is gone) does not get better by asking again.
      if (res.status >= 400 && res.status < 500) {
        row.removeAttribute('data-batch-url');
        text.textContent =
          res.status === 401
            ? 'Your session ended: sign in again to follow this batch.'
            : `This batch cannot be followed (HTTP ${res.status}).`;
        return;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      if (!show(row, (await res.json()) as BatchStatus)) setTimeout(tick, POLL_MS);
    } catch {
      setTimeout(tick, RETRY_MS);
    }
  };
  void tick();
}
