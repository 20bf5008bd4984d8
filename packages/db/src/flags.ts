import type { Sql } from './client.ts';

export const FEATURES = ['quests', 'campaigns'] as const;
export type Feature = (typeof FEATURES)[number];
export type FeatureFlags = Record<Feature, boolean>;

export async function getFeatureFlags(sql: Sql): Promise<FeatureFlags> {
  const rows = await sql<{ name: Feature; enabled: boolean }[]>`select name, enabled from feature_flags`;
  const flags: FeatureFlags = { quests: true, campaigns: true };
  for (const row of rows) flags[row.name] = row.enabled;
  return flags;
}

export async function setFeatureFlags(sql: Sql, changes: Partial<FeatureFlags>): Promise<FeatureFlags> {
  for (const [name, enabled] of Object.entries(changes) as [Feature, boolean][]) {
    await sql`
      insert into feature_flags (name, enabled, updated_at) values (${name}, ${enabled}, now())
      on conflict (name) do update set enabled = excluded.enabled, updated_at = now()`;
  }
  return getFeatureFlags(sql);
}
