import { type FeatureFlags, getFeatureFlags, setFeatureFlags } from '@quest/db';
import type { CommandOutput, Context } from '../context.ts';
import { renderTable } from '../format.ts';

function output(flags: FeatureFlags): CommandOutput {
  return {
    json: { features: { quests: flags.quests, campaigns: flags.campaigns } },
    text: renderTable(
      ['feature', 'state'],
      Object.entries(flags).map(([name, enabled]) => [name, enabled ? 'on' : 'off']),
    ),
  };
}

export async function featuresShow(ctx: Context): Promise<CommandOutput> {
  return output(await getFeatureFlags(await ctx.db()));
}

export async function featuresSet(ctx: Context, changes: Partial<FeatureFlags>): Promise<CommandOutput> {
  return output(await setFeatureFlags(await ctx.db(), changes));
}
