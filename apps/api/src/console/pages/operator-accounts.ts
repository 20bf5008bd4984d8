import { importAccounts } from '@quest/db/accounts';
import { DomainError } from '@quest/domain';
import type { FastifyInstance } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { parseAccountCsv } from '../csv.ts';
import { html } from '../html.ts';

/**
 * The operator's account import: a CSV file of pass addresses, sent by the page's script as
 * text/csv, answered with the counts (created, skipped, invalid with their lines).
 */
export function operatorAccountRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/operator/accounts', OPERATOR, async (request, reply) => {
    const body = html`<p>Create the accounts that credits go to from a CSV file of pass addresses: its first line is the
        header, naming a <code>pass</code> (or <code>address</code>) column; other columns are ignored. Existing accounts are
        skipped, so a file can be imported again.</p>
      <form id="import" method="post" action="${consolePath('operator', 'accounts', 'import')}" class="stack">
        <label for="accounts-file">File of addresses</label>
        <input id="accounts-file" name="file" type="file" accept=".csv,.txt,text/csv,text/plain" required>
        <div><button type="submit">Import accounts</button></div>
        <progress id="import-progress" hidden max="1" value="0" aria-label="Upload progress"></progress>
        <p id="import-message" aria-live="polite"></p>
      </form>`;
    return ctx.page(reply, { title: 'Account import', request, body });
  });

  app.post('/operator/accounts/import', OPERATOR, async (request) => {
    if (typeof request.body !== 'string') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as text/csv.');
    const rows = await parseAccountCsv(request.body);
    const result = await importAccounts(ctx.deps.sql, rows, { maxInvalidRows: 20 });
    request.log.info(
      { console: 'accounts imported', created: result.created, invalid: result.invalid },
      'console: accounts imported',
    );
    return result;
  });
}
