import cliProgress from 'cli-progress';
import { createAccount, importAccounts } from '@quest/db/accounts';
import type { CommandOutput, Context } from '../context.ts';
import { openAccountCsv } from '../csv.ts';
import { plural, renderFields } from '../format.ts';

export async function accountCreate(ctx: Context, opts: { pass: string }): Promise<CommandOutput> {
  const account = await createAccount(await ctx.db(), { pass: opts.pass });
  return {
    json: { account: { id: account.id, pass: account.pass } },
    text: renderFields('Account created', [
      ['id', account.id],
      ['pass', account.pass],
    ]),
  };
}

/** Invalid rows reported back, at most; the count always covers them all. */
export const MAX_INVALID_ROWS_REPORTED = 100;

export async function accountImport(ctx: Context, opts: { file: string }): Promise<CommandOutput> {
  const csv = await openAccountCsv(opts.file);
  const sql = await ctx.db();
  const bar =
    ctx.io.interactive && !ctx.json
      ? new cliProgress.SingleBar(
          {
            format: 'importing |{bar}| {percentage}% | {rows} rows | {created} created',
            hideCursor: true,
            clearOnComplete: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(Math.max(csv.size, 1), 0, { rows: 0, created: 0 });
  let result: Awaited<ReturnType<typeof importAccounts>>;
  try {
    result = await importAccounts(sql, csv.rows, {
      maxInvalidRows: MAX_INVALID_ROWS_REPORTED,
      onProgress: (p) => bar?.update(csv.bytesRead(), { rows: p.processed, created: p.created }),
    });
  } finally {
    bar?.stop();
  }
  const { created, skipped, invalid, invalidRows } = result;
  const lines = [
    renderFields(`Imported ${opts.file}`, [
      ['created', created],
      ['skipped (already existed)', skipped],
      ['invalid', invalid],
    ]),
  ];
  if (invalid > 0) {
    lines.push('', 'Invalid rows (expected 0x followed by 40 hex digits):');
    for (const row of invalidRows) lines.push(`  line ${row.line}: ${JSON.stringify(row.value)}`);
    if (invalid > invalidRows.length) lines.push(`  … and ${plural(invalid - invalidRows.length, 'more row')}`);
  }
  return { json: { created, skipped, invalid, invalidRows }, text: lines.join('\n') };
}
