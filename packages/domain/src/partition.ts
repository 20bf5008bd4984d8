/**
 * The partition a quest's allocations are queued on. Quest ids are dense integers, so the
 * remainder spreads them exactly evenly; every producer and consumer must use the same count.
 */
export function partitionOf(questId: number, partitions: number): number {
  if (!Number.isSafeInteger(questId) || questId < 0) throw new RangeError(`bad quest id ${questId}`);
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`bad partition count ${partitions}`);
  return questId % partitions;
}

/**
 * Which partitions a live worker owns: partitions are dealt round-robin over the sorted member
 * list, so every live member gets ⌊P/N⌋ or ⌈P/N⌉ of them and every partition has one owner.
 */
export function assignPartitions(members: readonly string[], self: string, partitions: number): number[] {
  const sorted = [...new Set(members)].sort();
  const index = sorted.indexOf(self);
  if (index < 0) return [];
  const owned: number[] = [];
  for (let p = index; p < partitions; p += sorted.length) owned.push(p);
  return owned;
}
