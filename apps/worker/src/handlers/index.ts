import type { JobHandlers } from '@quest/domain';
import { handleAllocate } from './allocate.ts';
import { handleBatch } from './batch.ts';
import type { HandlerDeps } from './retry.ts';

export type { HandlerDeps } from './retry.ts';
export { handleAllocate } from './allocate.ts';

/** The worker's side of the job catalogue: one handler per job name (a missing one does not compile). */
export function createHandlers(deps: HandlerDeps): JobHandlers {
  return {
    allocate: (data, job) => handleAllocate(deps, data, job),
    batch: (data, job) => handleBatch(deps, data, job),
  };
}
