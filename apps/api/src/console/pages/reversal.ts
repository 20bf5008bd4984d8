import { randomUUID } from 'node:crypto';
import { getConsolePayout } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { FastifyInstance } from 'fastify';
import { bodyOf } from '../../commands/answer.ts';
import { sessionCaller } from '../caller.ts';
import { type ConsoleContext, consolePath, OWNER } from '../context.ts';
import { field, formOf } from '../forms.ts';
import { csrfField, fmt, html, when } from '../html.ts';
import { pathId, pathQuestId } from '../ids.ts';
import { ownQuest } from '../own-quest.ts';

/** The reversal form's fields as the reversal command takes them (it checks them again). */
function reversalInput(form: Record<string, string | undefined>) {
  const value = field(form, 'points');
  const points = value === '' ? undefined : Number(value);
  if (points !== undefined && (!Number.isSafeInteger(points) || points < 1))
    throw new DomainError('VALIDATION_FAILED', 'Points must be a whole number of at least 1.');
  const reason = field(form, 'reason').slice(0, 500) || undefined;
  const key = field(form, 'idempotencyKey');
  return { points, reason, idempotencyKey: /^[0-9a-f-]{36}$/.test(key) ? key : undefined };
}

/**
 * A payout's reversal: a confirmation page with the points to reverse (all that is left, by
 * default) and a reason, posted through the reversal command like POST …/reversals.
 */
export function reversalRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/quests/:questId/payouts/:payoutId/reverse', OWNER, async (request, reply) => {
    const quest = await ownQuest(ctx, request);
    const payout = await getConsolePayout(ctx.deps.sql, quest.id, pathId(request, 'payoutId'));
    if (!payout) throw new DomainError('PAYOUT_NOT_FOUND');
    const left = payout.amount - payout.reversed;
    const body = html`
      <p>Payout <code>${payout.id}</code> credited <strong>${fmt(payout.amount)}</strong> points to <code>${payout.pass}</code>
        on ${when(payout.createdAt)}${payout.reversed ? html`; ${fmt(payout.reversed)} of them were reversed already` : ''}.</p>
      <p>Reversing takes the points back from the account and returns them to the quest's budget
        (now ${fmt(quest.pointsRemaining)} of ${fmt(quest.totalPoints)}).</p>
      <form method="post" action="${consolePath('quests', quest.id, 'payouts', payout.id, 'reverse')}" class="stack">
        ${csrfField(ctx.viewer(request)!)}
        <input type="hidden" name="idempotencyKey" value="${randomUUID()}">
        <label for="points">Points to reverse (at most ${fmt(left)})</label>
        <input id="points" name="points" type="number" min="1" max="${left}" value="${left}" required>
        <label for="reason">Reason (optional)</label>
        <input id="reason" name="reason" type="text" maxlength="500">
        <div><button type="submit" class="danger">Confirm reversal</button> <a href="${consolePath('quests', quest.id)}" class="button secondary">Cancel</a></div>
      </form>`;
    return ctx.page(reply, { title: 'Reverse a payout?', request, body });
  });

  app.post('/quests/:questId/payouts/:payoutId/reverse', OWNER, async (request, reply) => {
    const questId = pathQuestId(request);
    const input = { questId, payoutId: pathId(request, 'payoutId'), ...reversalInput(formOf(request)) };
    const { status, body } = bodyOf(await ctx.deps.commands.reverse(sessionCaller(ctx, request, reply), input));
    const outcome = status === 202 ? 'reversal=pending' : `reversed=${'amount' in body.reversal ? body.reversal.amount : 0}`;
    return reply.redirect(`${consolePath('quests', questId)}?${outcome}`, 303);
  });
}
