import type { Ctx, ScenarioOutput } from '../context.ts';
import { throughputScenario } from './throughput.ts';

/** hot: the throughput scenario's load on one quest (one partition, one budget row), against its limits. */
export async function hotScenario(ctx: Ctx): Promise<ScenarioOutput> {
  return (await throughputScenario(ctx, 'hot', { withLimit: true, sampleMemory: false })).out;
}
