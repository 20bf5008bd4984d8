import type { Sql } from './client.ts';
import { dropPendingDeliveries } from './deliveries.ts';
import { type EndpointRow, markEndpointDeleted } from './endpoints.ts';

/**
 * Webhooks (docs/events.md): endpoints (endpoints.ts, the writer of `webhook_endpoints`), their
 * deliveries (deliveries.ts, the writer of `webhook_deliveries`; reads in delivery-reads.ts), and
 * the commands that change both, each in one transaction.
 */

// The commands and reads callers use; the statements other writers compose (fan-out, purge,
// health, and the halves of deleteEndpoint) stay inside the package.
export {
  type AttemptRecord,
  claimDueDeliveries,
  type DeliveryGroup,
  type QueuedDelivery,
  recordAttempts,
  replayEvents,
  touchDeliveries,
} from './deliveries.ts';
export {
  type DeliveryEndpoint,
  type DeliveryLogRow,
  type DeliveryWork,
  deliveryCounts,
  findStrandedDeliveries,
  getDeliveryWorks,
  listDeliveries,
  type StrandedDelivery,
} from './delivery-reads.ts';
export { type EndpointRow, getEndpoint, insertEndpoint, listEndpoints, rotateEndpointSecret } from './endpoints.ts';

/** Delete (soft: its delivery log stays) an owner's endpoint and drop its pending deliveries, in one transaction. */
export function deleteEndpoint(sql: Sql, id: string, ownerId: string): Promise<EndpointRow | undefined> {
  return sql.begin(async (transaction) => {
    const tx = transaction as unknown as Sql;
    const row = await markEndpointDeleted(tx, id, ownerId);
    if (row) await dropPendingDeliveries(tx, id);
    return row;
  }) as Promise<EndpointRow | undefined>;
}
