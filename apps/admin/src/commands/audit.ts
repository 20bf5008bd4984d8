import { audit } from '@quest/db/audit';
import type { CommandOutput, Context } from '../context.ts';
import { plural, renderTable } from '../format.ts';

/** Offending rows listed per kind, at most; the violation counts cover them all. */
const MAX_ROWS_LISTED = 100;

export async function auditCommand(ctx: Context): Promise<CommandOutput> {
  const report = await audit(await ctx.db(), { limit: MAX_ROWS_LISTED });
  const { checked, violations } = report;
  const scope = `${plural(checked.quests, 'quest')}, ${plural(checked.accounts, 'account')}, ${plural(checked.payouts, 'payout')} (${plural(checked.pointsPaidOut, 'point')} paid out)`;
  const lines: string[] = [];
  if (report.ok) {
    lines.push(`Audit OK: ${scope}; every quest and account balances and nothing is negative.`);
  } else {
    lines.push(
      `Audit FAILED: ${plural(violations.quests, 'quest')}, ${plural(violations.accounts, 'account')}, ${plural(violations.payouts, 'payout')} break the ledger invariants (checked ${scope}).`,
    );
    const more = (shown: number, total: number) => (total > shown ? [`  … and ${total - shown} more`] : []);
    if (report.quests.length) {
      lines.push('', 'Quests (invariant: total_points = points_remaining + sum of payouts):');
      lines.push(
        renderTable(
          ['quest', 'total_points', 'points_remaining', 'paid_out', 'discrepancy', 'problem'],
          report.quests.map((q) => [
            q.questId,
            q.totalPoints,
            q.pointsRemaining,
            q.paidOut,
            q.discrepancy,
            q.problems.join('; '),
          ]),
        ),
        ...more(report.quests.length, violations.quests),
      );
    }
    if (report.accounts.length) {
      lines.push('', 'Accounts (invariant: balance = sum of payouts):');
      lines.push(
        renderTable(
          ['account', 'pass', 'balance', 'paid_in', 'discrepancy', 'problem'],
          report.accounts.map((a) => [a.accountId, a.pass, a.balance, a.paidIn, a.discrepancy, a.problems.join('; ')]),
        ),
        ...more(report.accounts.length, violations.accounts),
      );
    }
    if (report.payouts.length) {
      lines.push('', 'Payouts (invariant: amount > 0):');
      lines.push(
        renderTable(
          ['payout', 'quest', 'account', 'amount'],
          report.payouts.map((p) => [p.payoutId, p.questId, p.accountId, p.amount]),
        ),
        ...more(report.payouts.length, violations.payouts),
      );
    }
  }
  return { json: { ...report }, text: lines.join('\n'), exitCode: report.ok ? 0 : 1 };
}
