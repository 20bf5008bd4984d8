import { audit } from '@quest/db/audit';
import type { CommandOutput, Context } from '../context.ts';
import { plural, renderTable } from '../format.ts';

/** Offending rows listed per kind, at most; the violation counts cover them all. */
const MAX_ROWS_LISTED = 100;

export async function auditCommand(ctx: Context): Promise<CommandOutput> {
  const report = await audit(await ctx.db(), { limit: MAX_ROWS_LISTED });
  const { checked, violations } = report;
  const reversed = checked.reversals
    ? `, ${plural(checked.reversals, 'reversal')} (${plural(checked.pointsReversed, 'point')} taken back)`
    : '';
  const scope = `${plural(checked.quests, 'quest')}, ${plural(checked.accounts, 'account')}, ${plural(checked.payouts, 'payout')} (${plural(checked.pointsPaidOut, 'point')} paid out)${reversed}`;
  const lines: string[] = [];
  if (report.ok) {
    lines.push(`Audit OK: ${scope}; every quest and account balances and nothing is negative.`);
  } else {
    lines.push(
      `Audit FAILED: ${plural(violations.quests, 'quest')}, ${plural(violations.accounts, 'account')}, ${plural(violations.payouts, 'payout')} break the ledger invariants (checked ${scope}).`,
    );
    const more = (shown: number, total: number) => (total > shown ? [`  … and ${total - shown} more`] : []);
    if (report.quests.length) {
      lines.push('', 'Quests (invariant: total_points = points_remaining + sum of payouts - sum of reversals):');
      lines.push(
        renderTable(
          ['quest', 'total_points', 'points_remaining', 'paid_out', 'reversed', 'discrepancy', 'problem'],
          report.quests.map((q) => [
            q.questId,
            q.totalPoints,
            q.pointsRemaining,
            q.paidOut,
            q.reversed,
            q.discrepancy,
            q.problems.join('; '),
          ]),
        ),
        ...more(report.quests.length, violations.quests),
      );
    }
    if (report.accounts.length) {
      lines.push('', 'Accounts (invariant: balance = sum of payouts - sum of reversals, never below 0):');
      lines.push(
        renderTable(
          ['account', 'pass', 'balance', 'paid_in', 'reversed', 'discrepancy', 'problem'],
          report.accounts.map((a) => [
            a.accountId,
            a.pass,
            a.balance,
            a.paidIn,
            a.reversed,
            a.discrepancy,
            a.problems.join('; '),
          ]),
        ),
        ...more(report.accounts.length, violations.accounts),
      );
    }
    if (report.payouts.length) {
      lines.push('', 'Payouts (invariant: amount > 0, its reversals add up to no more than it, of its quest and account):');
      lines.push(
        renderTable(
          ['payout', 'quest', 'account', 'amount', 'reversed', 'problem'],
          report.payouts.map((p) => [p.payoutId, p.questId, p.accountId, p.amount, p.reversed, p.problems.join('; ')]),
        ),
        ...more(report.payouts.length, violations.payouts),
      );
    }
  }
  return { json: { ...report }, text: lines.join('\n'), exitCode: report.ok ? 0 : 1 };
}
