import { type AllocateOutcome, type AllocateRequest, allocate } from './allocate.ts';
import { type CreditBatchReport, type CreditManyOptions, creditMany } from './credit/many.ts';
import type { RowSource } from './credit/plan.ts';
import type { CreditRow } from './credit/rows.ts';
import { type EventsPage, type EventsQuery, iterateEvents, listEvents } from './events.ts';
import { type ReverseOutcome, type ReverseRequest, reverse } from './reverse.ts';
import { withDefaults } from './retry.ts';
import { type QuestClientOptions, Transport } from './transport.ts';
import type { Allocation, Batch, Campaign, Event, PayoutDetail, PublicQuest, QuestDetail, ReversalStatus } from './types.ts';
import { webhooks } from './webhooks.ts';

export interface Page {
  limit?: number | undefined;
  offset?: number | undefined;
}

/** A page as the query string takes it: only the fields given. */
type PageQuery = { limit?: number; offset?: number };

/**
 * The Quest Rewards API, doing the right thing by default: every call retries transport errors,
 * 429 and 5xx (honouring Retry-After, capped, with jitter); credits carry an Idempotency-Key kept
 * across retries; 202s are followed to their decision. `raw` is the typed openapi-fetch client for
 * anything else, without those defaults.
 */
export interface QuestClient {
  /** Credit points to one account, exactly once. */
  allocate(request: AllocateRequest): Promise<AllocateOutcome>;
  /** Take points back from a payout (all of its remainder without `points`), exactly once. */
  reverse(request: ReverseRequest): Promise<ReverseOutcome>;
  /** Credit many rows through batches; yields per-batch reports with per-row results. */
  creditMany<R extends CreditRow>(
    questId: number,
    rows: RowSource<R>,
    options?: CreditManyOptions<R>,
  ): AsyncGenerator<CreditBatchReport<R>, void, undefined>;
  /** A quest with a page of its payouts (owner's key). */
  getQuest(questId: number, page?: Page, o?: { signal?: AbortSignal | undefined }): Promise<QuestDetail>;
  /** Public quests, optionally of one owner (by pass address). */
  listQuests(query?: Page & { owner?: string | undefined }, o?: { signal?: AbortSignal | undefined }): Promise<PublicQuest[]>;
  getCampaign(id: number, o?: { signal?: AbortSignal | undefined }): Promise<Campaign>;
  /** An allocation's status (the Location of a 202). */
  getAllocation(questId: number, allocationId: string, o?: { signal?: AbortSignal | undefined }): Promise<Allocation>;
  /** A reversal's status (the Location of a 202). */
  getReversal(questId: number, reversalId: string, o?: { signal?: AbortSignal | undefined }): Promise<ReversalStatus>;
  /** A payout with reversed_amount and its reversals (owner's key). */
  getPayout(questId: number, payoutId: string, o?: { signal?: AbortSignal | undefined }): Promise<PayoutDetail>;
  /** A batch's progress and a page of its results. */
  getBatch(questId: number, batchId: string, page?: Page, o?: { signal?: AbortSignal | undefined }): Promise<Batch>;
  /** The owner's event feed (GET /events): one page, or every event after a cursor, in commit order. */
  events: {
    list(query?: EventsQuery): Promise<EventsPage>;
    iterate(query?: EventsQuery): AsyncGenerator<Event, void, undefined>;
  };
  webhooks: typeof webhooks;
  raw: Transport['api'];
}

export function createQuestClient(options: QuestClientOptions): QuestClient {
  const t = new Transport(options);
  const { api } = t;
  const read = async <D>(
    operation: string,
    send: (signal: AbortSignal) => Promise<{ data?: D; error?: unknown; response: Response }>,
    signal?: AbortSignal,
  ) => t.ok(await t.call(operation, send, { signal }), operation);
  return {
    allocate: (request) => allocate(t, request),
    reverse: (request) => reverse(t, request),
    creditMany: (questId, rows, o) => creditMany(t, questId, rows, o),
    getQuest: (questId, page = {}, o = {}) =>
      read(
        'getQuest',
        (signal) =>
          api.GET('/quests/{questId}', { params: { path: { questId }, query: withDefaults<PageQuery>({}, page) }, signal }),
        o.signal,
      ),
    listQuests: (query = {}, o = {}) =>
      read(
        'listPublicQuests',
        (signal) => api.GET('/quests', { params: { query: withDefaults<PageQuery & { owner?: string }>({}, query) }, signal }),
        o.signal,
      ),
    getCampaign: (id, o = {}) =>
      read('getCampaign', (signal) => api.GET('/campaigns/{id}', { params: { path: { id } }, signal }), o.signal),
    getAllocation: async (questId, allocationId, o = {}) =>
      (
        await read(
          'getAllocation',
          (signal) =>
            api.GET('/quests/{questId}/allocations/{allocationId}', { params: { path: { questId, allocationId } }, signal }),
          o.signal,
        )
      ).allocation,
    getReversal: async (questId, reversalId, o = {}) =>
      (
        await read(
          'getReversal',
          (signal) => api.GET('/quests/{questId}/reversals/{reversalId}', { params: { path: { questId, reversalId } }, signal }),
          o.signal,
        )
      ).reversal,
    getPayout: async (questId, payoutId, o = {}) =>
      (
        await read(
          'getPayout',
          (signal) => api.GET('/quests/{questId}/payouts/{payoutId}', { params: { path: { questId, payoutId } }, signal }),
          o.signal,
        )
      ).payout,
    getBatch: async (questId, batchId, page = {}, o = {}) =>
      (
        await read(
          'getBatch',
          (signal) =>
            api.GET('/quests/{questId}/batches/{batchId}', {
              params: { path: { questId, batchId }, query: withDefaults<PageQuery>({}, page) },
              signal,
            }),
          o.signal,
        )
      ).batch,
    events: { list: (query) => listEvents(t, query), iterate: (query) => iterateEvents(t, query) },
    webhooks,
    raw: api,
  };
}
