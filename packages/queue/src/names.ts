/** Queue of partition p: `alloc-p07`. BullMQ keys live under `${prefix}:${queueName}:…`. */
export function partitionQueueName(partition: number): string {
  return `alloc-p${String(partition).padStart(2, '0')}`;
}

export const membersKey = (prefix: string) => `${prefix}:pool:members`;
export const partitionsKey = (prefix: string) => `${prefix}:pool:partitions`;
export const reconcilerLockKey = (prefix: string) => `${prefix}:pool:reconciler:lock`;
export const reconcilerLastRunKey = (prefix: string) => `${prefix}:pool:reconciler:last`;
