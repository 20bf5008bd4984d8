import type { AllocationOutcome } from '@quest/domain';

/** Settings both the producer (api) and the consumer (worker) must agree on. */
export interface QueueSettings {
  redisUrl: string;
  prefix: string;
  partitions: number;
}

export type AllocateResult = AllocationOutcome | { status: 'pending' };

/**
 * The API's handle on the allocation pipeline (implemented by the pipeline owner; this is the
 * contract the routes and server code against).
 */
export interface Allocator {
  allocate(item: { key: string; questId: number; points: number; address: string }): Promise<AllocateResult>;
  /** Resolves when Redis answers; rejects otherwise (used by /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface AllocatorOptions extends QueueSettings {
  waitMs: number;
}

export async function createAllocator(_opts: AllocatorOptions): Promise<Allocator> {
  throw new Error('not implemented yet');
}
