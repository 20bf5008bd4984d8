import type { Sql } from '@quest/db';
import { generateApiKey, hashApiKey, toChecksumAddress } from '@quest/domain';

/**
 * Provisioning, straight into SQL like seed() in @quest/testing: one owner with one API key,
 * quests in bulk (generate_series), accounts in bulk (unnest). Addresses are stored EIP-55
 * checksummed, as the service stores them, and sent that way.
 */

export interface Owner {
  ownerId: string;
  apiKey: string;
}

/** Deterministic pass address n (n ≥ 1), checksummed. */
export function benchAddress(n: number): string {
  const raw = `0x${(0xbe00_0000_0000 + n).toString(16).padStart(40, '0')}`;
  return toChecksumAddress(raw)!;
}

export async function seedOwner(sql: Sql): Promise<Owner> {
  const ownerId = `own_bench${Date.now().toString(36)}`;
  const apiKey = generateApiKey();
  const pass = benchAddress(0xffff_ffff);
  await sql`insert into owners (id, name, pass_address) values (${ownerId}, 'Bench owner', ${pass})`;
  await sql`insert into api_keys (id, owner_id, key_hash, prefix) values (${`key_${ownerId}`}, ${ownerId}, ${hashApiKey(apiKey)}, ${apiKey.slice(0, 7)})`;
  return { ownerId, apiKey };
}

/** Budget large enough that no scenario can run a quest dry. */
export const QUEST_BUDGET = 1_000_000_000_000;

export async function seedQuests(sql: Sql, ownerId: string, count: number, label: string): Promise<number[]> {
  const rows = await sql<{ id: number }[]>`
    insert into quests (owner_id, name, description, start_at, end_at, total_points, points_remaining)
    select ${ownerId}, ${label} || ' ' || n, 'bench', now() - interval '1 hour', now() + interval '7 days',
           ${QUEST_BUDGET}, ${QUEST_BUDGET}
    from generate_series(1, ${count}) n
    returning id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** Accounts 1..count (idempotent), inserted in slices of 20,000 through unnest. */
export async function seedAccounts(sql: Sql, count: number): Promise<string[]> {
  const addresses = Array.from({ length: count }, (_, i) => benchAddress(i + 1));
  for (let i = 0; i < addresses.length; i += 20_000) {
    const slice = addresses.slice(i, i + 20_000);
    await sql`insert into accounts (pass_address) select * from unnest(${slice}::text[]) on conflict (pass_address) do nothing`;
  }
  return addresses;
}
