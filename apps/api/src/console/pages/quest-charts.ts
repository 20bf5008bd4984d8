import { type ActivityBucket, type OwnerQuestRow, questActivity, type Sql } from '@quest/db';
import { barChart, lineChart } from '../charts.ts';
import { fmt, type Html, html, when } from '../html.ts';

/** The periods a quest's charts cover, each in buckets of `bucket` minutes. */
export const PERIODS = [
  { id: '1h', label: '1 h', minutes: 60, bucket: 1, bucketLabel: 'minute' },
  { id: '24h', label: '24 h', minutes: 24 * 60, bucket: 15, bucketLabel: '15 minutes' },
  { id: '7d', label: '7 days', minutes: 7 * 24 * 60, bucket: 120, bucketLabel: '2 hours' },
] as const;

export type Period = (typeof PERIODS)[number];

/** The period a page's `?period=` names; the first one otherwise. */
export const periodOf = (id: unknown): Period => PERIODS.find((p) => p.id === id) ?? PERIODS[0];

/** Budget at the end of each bucket of the period: now's, plus what was spent since. */
export function budgetSeries(remainingNow: number, activity: readonly ActivityBucket[], period: Period, now: Date) {
  const bucketMs = period.bucket * 60_000;
  const startMs = now.getTime() - period.minutes * 60_000;
  let remaining = remainingNow;
  const budget: { x: number; y: number }[] = [{ x: now.getTime(), y: remaining }];
  for (const m of [...activity].reverse()) {
    budget.push({ x: Math.min(now.getTime(), m.start.getTime() + bucketMs), y: remaining });
    remaining += m.points - m.reversed;
    budget.push({ x: Math.max(startMs, m.start.getTime()), y: remaining });
  }
  budget.push({ x: startMs, y: remaining });
  return budget.sort((a, b) => a.x - b.x);
}

/** Credits in each bucket of the period, empty ones included. */
export function creditsPerBucket(activity: readonly ActivityBucket[], period: Period, now: Date) {
  const bucketMs = period.bucket * 60_000;
  const first = Math.floor((now.getTime() - period.minutes * 60_000) / bucketMs) + 1;
  const count = Math.round(period.minutes / period.bucket);
  const byBucket = new Map(activity.map((m) => [Math.floor(m.start.getTime() / bucketMs), m.credits]));
  return Array.from({ length: count }, (_, i) => ({
    label: when(new Date((first + i) * bucketMs)),
    value: byBucket.get(first + i) ?? 0,
  }));
}

const periodLinks = (period: Period) =>
  html`<nav aria-label="Chart period" class="periods">${PERIODS.map((p) =>
    p.id === period.id
      ? html`<a href="?period=${p.id}" aria-current="page">${p.label}</a>`
      : html`<a href="?period=${p.id}">${p.label}</a>`,
  )}</nav>`;

/**
 * The quest page's charts over `period`: its budget and its credits per bucket (the inside of
 * #quest-charts, which the page's script replaces with a fresh copy when a batch ends).
 */
export async function questCharts(sql: Sql, quest: OwnerQuestRow, period: Period): Promise<Html> {
  const activity = await questActivity(sql, quest.id, period.minutes, period.bucket);
  const now = new Date();
  const budget = budgetSeries(quest.pointsRemaining, activity, period, now);
  const credits = activity.reduce((n, m) => n + m.credits, 0);
  const ends = { from: `${period.label} ago`, to: 'now' };
  return html`<h2 id="chart-h">Budget, last ${period.label}</h2>
    ${periodLinks(period)}
    ${lineChart(budget, {
      label: `Points remaining over the last ${period.label}, from ${fmt(budget[0]!.y)} to ${fmt(quest.pointsRemaining)} now`,
      ...ends,
    })}
    <h2>Credits per ${period.bucketLabel}</h2>
    <p class="muted">${fmt(credits)} credits in the last ${period.label}.</p>
    ${barChart(creditsPerBucket(activity, period, now), {
      label: `Credits per ${period.bucketLabel} over the last ${period.label}: ${fmt(credits)} in all`,
      ...ends,
    })}`;
}
