import calculateSlot from 'cluster-key-slot';

/**
 * Redis key layout. On a Redis Cluster every multi-key operation (each BullMQ script) must touch one
 * slot, so each partition queue's keys carry a hash tag of their own — `quest:alloc-p07{p07-5}:wait`
 * hashes only `p07-5` — and the partitions spread over the cluster's slots. The pool's keys share
 * the `{pool}` tag. On a standalone Redis the braces are just characters.
 */

/** Slots of a cluster (CRC16 mod 16384). */
const SLOTS = 16_384;
/** The masters `redis-cli --cluster create` makes by default; partitions are balanced over them. */
const DEFAULT_MASTERS = 3;

/**
 * Slot range of master m of n as `redis-cli --cluster create` assigns them (its
 * clusterManagerCommandCreate: 16384 / n slots per master, rounded at each boundary; 0–5460,
 * 5461–10922, 10923–16383 for three).
 */
export function defaultSlotRange(m: number, n: number): [number, number] {
  const perNode = SLOTS / n;
  let first = 0;
  for (let j = 0; ; j++) {
    let last = Math.round(j * perNode + perNode - 1);
    if (last > SLOTS || j === n - 1) last = SLOTS - 1;
    if (last < first) last = first;
    if (j === m) return [first, last];
    first = last + 1;
  }
}

const tags = new Map<number, string>();

/**
 * The hash tag of partition p: `p07-<n>` with the smallest n whose slot falls in the range of
 * master p mod 3 of a default three-master cluster, and within it in the (p div 3)-th of as many
 * equal sub-ranges as that master gets partitions. So 16 partitions go 6/5/5 over three masters
 * and spread over each master's slots (a later reshard moves whole slots, so whole partitions).
 * Deterministic: every process and every version computes the same names.
 */
export function partitionTag(partition: number): string {
  const known = tags.get(partition);
  if (known) return known;
  const master = partition % DEFAULT_MASTERS;
  const [lo, hi] = defaultSlotRange(master, DEFAULT_MASTERS);
  // Spread the partitions of one master over its range: at most 256 partitions, ≤ 86 per master.
  const perMaster = Math.ceil(256 / DEFAULT_MASTERS);
  const width = (hi - lo + 1) / perMaster;
  const k = Math.floor(partition / DEFAULT_MASTERS);
  const from = lo + Math.floor(k * width);
  const to = lo + Math.floor((k + 1) * width) - 1;
  const p = `p${String(partition).padStart(2, '0')}`;
  for (let n = 0; ; n++) {
    const slot = calculateSlot(`${p}-${n}`);
    if (slot >= from && slot <= to) {
      const tag = `${p}-${n}`;
      tags.set(partition, tag);
      return tag;
    }
  }
}

/** Queue of partition p: `alloc-p07{p07-…}`. BullMQ keys live under `${prefix}:${queueName}:…`. */
export function partitionQueueName(partition: number): string {
  return `alloc-p${String(partition).padStart(2, '0')}{${partitionTag(partition)}}`;
}

/** The slot every key of partition p's queue hashes to. */
export const partitionSlot = (partition: number) => calculateSlot(partitionTag(partition));

/** Partition number of a queue name (`alloc-p07{p07-…}` → 7), or null. */
export function partitionOfQueueName(name: string): number | null {
  const m = /^alloc-p(\d+)\{/.exec(name);
  return m ? Number(m[1]) : null;
}

export const membersKey = (prefix: string) => `${prefix}:{pool}:members`;
/** Pub/sub channel on which a worker announces that it left or joined the pool (apps/worker, pool/pool.ts). */
export const poolChangedChannel = (prefix: string) => `${prefix}:{pool}:changed`;
/** Each worker's last health report (apps/worker, pool/membership.ts), beside the membership. */
export const healthKey = (prefix: string) => `${prefix}:{pool}:health`;
export const partitionsKey = (prefix: string) => `${prefix}:{pool}:partitions`;
export const reconcilerLockKey = (prefix: string) => `${prefix}:{pool}:reconciler:lock`;
export const reconcilerLastRunKey = (prefix: string) => `${prefix}:{pool}:reconciler:last`;

/**
 * The reply stream of one API process: where workers deliver the decisions of the jobs it queued.
 * One key, hash-tagged on the process id, so on a Redis Cluster it lives in one slot like any
 * single key (and the processes' streams spread over the slots).
 */
export const replyKey = (prefix: string, processId: string) => `${prefix}:reply:{${processId}}`;

/**
 * The webhook delivery queue: separate from the partitions (a slow receiver never holds an
 * allocation's place), hash-tagged so its keys share one slot on a cluster.
 */
export const WEBHOOK_QUEUE = 'webhooks{webhooks}';
