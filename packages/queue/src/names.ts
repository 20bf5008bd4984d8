/** Queue of partition p: `alloc-p07`. BullMQ keys live under `${prefix}:${queueName}:…`. */
export function partitionQueueName(partition: number): string {
  return `alloc-p${String(partition).padStart(2, '0')}`;
}

export const membersKey = (prefix: string) => `${prefix}:pool:members`;
export const partitionsKey = (prefix: string) => `${prefix}:pool:partitions`;
export const reconcilerLockKey = (prefix: string) => `${prefix}:pool:reconciler:lock`;
export const reconcilerLastRunKey = (prefix: string) => `${prefix}:pool:reconciler:last`;

/**
 * The reply stream of one API process: where workers deliver the decisions of the jobs it queued.
 * One key, hash-tagged on the process id, so on a Redis Cluster it lives in one slot like any
 * single key (and the processes' streams spread over the slots).
 */
export const replyKey = (prefix: string, processId: string) => `${prefix}:reply:{${processId}}`;
