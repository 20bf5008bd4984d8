import { getBatch, getOwnerQuest, listBatchRejections, listQuestBatches, type OwnerQuestRow, type Sql } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bodyOf } from '../../commands/answer.ts';
import { batchSummary } from '../../schemas/batches.ts';
import { sessionCaller } from '../caller.ts';
import { type ConsoleContext, consolePath, OWNER } from '../context.ts';
import { failedRowsOfUpload, parseCreditCsv } from '../csv.ts';
import { fmt, type Html, html, when } from '../html.ts';
import { pathId, pathQuestId } from '../ids.ts';
import { ownQuest, questQuery } from '../own-quest.ts';
import { payoutResults } from './payouts.ts';
import { periodOf, questCharts } from './quest-charts.ts';

type Batch = Awaited<ReturnType<typeof listQuestBatches>>[number];

/** Where the page's script follows a batch, and where its failed rows are. */
const statusUrl = (questId: number, batchId: string) => consolePath('api', 'quests', questId, 'batches', batchId);
const failedUrl = (questId: number, batchId: string) => consolePath('quests', questId, 'batches', batchId, 'failed.csv');

const isDone = (status: string) => status === 'completed' || status === 'failed';

function batchRow(questId: number, b: Batch): Html {
  const follow = isDone(b.status) ? html`data-batch-done="${b.status}"` : html`data-batch-url="${statusUrl(questId, b.id)}"`;
  return html`<tr ${follow}>
    <td><code data-batch-id>${b.id}</code><br><span class="muted" data-batch-created>${when(b.created_at)}</span></td>
    <td data-label="Status"><span data-batch-status class="status-${b.status}">${b.status}</span></td>
    <td><progress max="${b.total}" value="${b.processed}" aria-label="Progress of batch ${b.id}"></progress>
      <span data-batch-text>${fmt(b.processed)} of ${fmt(b.total)} processed, ${fmt(b.succeeded)} credited, ${fmt(b.failed)} failed</span></td>
    <td><a data-failed-link href="${failedUrl(questId, b.id)}" download ${b.failed > 0 ? '' : html`hidden`}>Failed rows (CSV)</a></td>
  </tr>`;
}

/** The quest page's upload form and its batches (the script adds a row per upload, from the template). */
export async function batchSection(sql: Sql, quest: OwnerQuestRow): Promise<Html> {
  const batches = await listQuestBatches(sql, quest.id, 20);
  return html`<section aria-labelledby="upload-h">
      <h2 id="upload-h">Credit from a CSV file</h2>
      <form id="upload" method="post" action="${consolePath('quests', quest.id, 'credit')}" class="stack" enctype="text/csv">
        <label for="csv">CSV file: the header <code>address,points</code> on line 1, then one row per line</label>
        <input id="csv" name="csv" type="file" accept=".csv,text/csv" required>
        <div><button type="submit">Upload and credit</button></div>
        <progress id="upload-progress" hidden max="1" value="0" aria-label="Upload progress"></progress>
        <p id="upload-message" aria-live="polite"></p>
      </form>
    </section>
    <section aria-labelledby="batches-h">
      <h2 id="batches-h">Batches</h2>
      <div class="table-wrap"><table class="cards">
        <thead><tr><th scope="col">Batch</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Failed rows</th></tr></thead>
        <tbody id="batch-rows">${batches.map((b) => batchRow(quest.id, b))}</tbody>
      </table></div>
      ${batches.length === 0 ? html`<p id="no-batches" class="muted">No batches yet.</p>` : ''}
      <template id="batch-row-template"><tr>
        <td><code data-batch-id></code><br><span class="muted" data-batch-created></span></td>
        <td data-label="Status"><span data-batch-status>pending</span></td>
        <td><progress max="1" value="0" aria-label="Batch progress"></progress> <span data-batch-text>Queued</span></td>
        <td><a data-failed-link href="#" download hidden>Failed rows (CSV)</a></td>
      </tr></template>
    </section>`;
}

/**
 * A batch as the quest page's script follows it: its progress and the quest's remaining points;
 * once it has ended, also the page's charts and recent payouts as the page's query shows them.
 */
async function batchStatus(ctx: ConsoleContext, request: FastifyRequest) {
  const { sql } = ctx.deps;
  const quest = await ownQuest(ctx, request);
  const row = await getBatch(sql, quest.id, pathId(request, 'batchId'));
  if (!row) throw new DomainError('BATCH_NOT_FOUND');
  const fresh = (await getOwnerQuest(sql, quest.id)) ?? quest;
  const status = {
    batch: batchSummary(row),
    quest: { id: quest.id, points_remaining: fresh.pointsRemaining, total_points: quest.totalPoints },
  };
  if (!isDone(row.status)) return status;
  const { period, search } = questQuery(request);
  const [charts, payouts] = await Promise.all([questCharts(sql, fresh, periodOf(period)), payoutResults(sql, fresh, search)]);
  return { ...status, views: { charts: charts.text, payouts: payouts.text } };
}

/**
 * An owner's batches: the CSV upload (the page's script sends the file as text/csv, with the CSRF
 * token in a header) through the batch command, the JSON the script polls, the failed rows.
 */
export function batchRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;

  app.post('/quests/:questId/credit', OWNER, async (request, reply) => {
    const questId = pathQuestId(request);
    if (typeof request.body !== 'string') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as text/csv.');
    const items = await parseCreditCsv(request.body);
    const uploadId = request.headers['x-upload-id'];
    const idempotencyKey =
      typeof uploadId === 'string' && /^[A-Za-z0-9_-]{8,100}$/.test(uploadId) ? `console-${uploadId}` : undefined;
    const input = { questId, items, idempotencyKey, respondAsync: true };
    const answer = await deps.commands.createBatch(sessionCaller(ctx, request, reply), input);
    if (!answer.ok && answer.error.code === 'ALLOCATION_FAILED') {
      const { processed } = answer.error.details as { processed: number };
      throw new DomainError(
        'ALLOCATION_FAILED',
        `The batch stopped after ${fmt(processed)} of ${fmt(items.length)} rows; upload the file again to resume.`,
      );
    }
    const { status, body } = bodyOf(answer);
    const { results: _, ...batch } = body.batch;
    return reply.code(status).send({ batch, statusUrl: statusUrl(questId, batch.id), failedUrl: failedUrl(questId, batch.id) });
  });

  app.get('/api/quests/:questId/batches/:batchId', OWNER, async (request) => batchStatus(ctx, request));

  app.get('/quests/:questId/batches/:batchId/failed.csv', OWNER, async (request, reply) => {
    const quest = await ownQuest(ctx, request);
    const batchId = pathId(request, 'batchId');
    const row = await getBatch(deps.sql, quest.id, batchId);
    if (!row) throw new DomainError('BATCH_NOT_FOUND');
    const rejected = await listBatchRejections(deps.sql, batchId);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${batchId.replace(/[^A-Za-z0-9_-]/g, '')}-failed.csv"`)
      .send(failedRowsOfUpload(rejected));
  });
}
