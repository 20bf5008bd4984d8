import { listRecentPayouts, type OwnerQuestRow, type Sql } from '@quest/db';
import { passAddressLowerSchema } from '@quest/domain';
import { consolePath } from '../context.ts';
import { fmt, type Html, html, when } from '../html.ts';

type Payout = Awaited<ReturnType<typeof listRecentPayouts>>[number];

const payoutRow = (questId: number, p: Payout) => html`<tr>
  <td class="opt" data-label="When">${when(p.createdAt)}</td>
  <td><code>${p.pass}</code></td>
  <td class="num" data-label="Points">${fmt(p.amount)}</td>
  <td class="num opt" data-label="Reversed">${fmt(p.reversed)}</td>
  <td>${
    p.reversed < p.amount
      ? html`<a href="${consolePath('quests', questId, 'payouts', p.id, 'reverse')}" aria-label="Reverse payout ${p.id} of ${fmt(p.amount)} points to ${p.pass}">Reverse…</a>`
      : html`<span class="muted">Reversed</span>`
  }</td>
</tr>`;

/**
 * A quest's 25 latest payouts, of the address searched if any (the inside of #payout-results,
 * which the page's script replaces with a fresh copy when a batch ends).
 */
export async function payoutResults(sql: Sql, quest: OwnerQuestRow, search: string): Promise<Html> {
  const address = search ? passAddressLowerSchema.safeParse(search) : undefined;
  if (address && !address.success)
    return html`<p role="alert" class="error">That is not an address (0x followed by 40 hexadecimal digits).</p>
      <p class="muted">No payouts for this address.</p>`;
  const payouts = await listRecentPayouts(sql, quest.id, { address: address?.data, limit: 25 });
  if (payouts.length === 0) return html`<p class="muted">No payouts${search ? ' for this address' : ''}.</p>`;
  return html`<div class="table-wrap"><table class="cards">
    <thead><tr><th scope="col" class="opt">When</th><th scope="col">Address</th><th scope="col" class="num">Points</th><th scope="col" class="num opt">Reversed</th><th scope="col">Action</th></tr></thead>
    <tbody>${payouts.map((p) => payoutRow(quest.id, p))}</tbody></table></div>`;
}

/** The quest page's recent payouts: the address search and its results. */
export const payoutSection = (quest: OwnerQuestRow, search: string, results: Html) => html`<section aria-labelledby="payouts-h">
  <h2 id="payouts-h">Recent payouts</h2>
  <form method="get" action="${consolePath('quests', quest.id)}" role="search" class="stack">
    <label for="address">Find the payouts of an address</label>
    <input id="address" name="address" type="search" value="${search}" placeholder="0x…" maxlength="42">
    <div><button type="submit" class="secondary">Search</button> ${search ? html`<a href="${consolePath('quests', quest.id)}">Show all</a>` : ''}</div>
  </form>
  <div id="payout-results">${results}</div>
</section>`;
