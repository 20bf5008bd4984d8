import { newId } from '@quest/domain';
import type { Sql } from '../client.ts';
import { AdminError, checkName, isUniqueViolation, type PassAddress } from './errors.ts';
import { type IssuedKey, insertKey } from './keys.ts';
import { checkLimit, type ListOptions, type ListPage, page } from './lists.ts';
import { requirePassAddress } from './pass.ts';

/** Owners: the operator creates them (each with its first API key) and lists them. */

export interface OwnerRecord {
  id: string;
  name: string;
  pass: PassAddress;
  createdAt: Date;
}

interface OwnerRow {
  id: string;
  name: string;
  pass_address: PassAddress;
  created_at: Date;
}
const toOwner = (r: OwnerRow): OwnerRecord => ({ id: r.id, name: r.name, pass: r.pass_address, createdAt: r.created_at });

/** Create an owner and its first API key, atomically. */
export async function createOwner(sql: Sql, input: { name: string; pass: string }): Promise<{ owner: OwnerRecord } & IssuedKey> {
  const name = checkName('owner', input.name);
  const pass = requirePassAddress(input.pass);
  try {
    return await sql.begin(async (tx) => {
      const [row] = await tx<OwnerRow[]>`
        insert into owners (id, name, pass_address) values (${newId('own')}, ${name}, ${pass})
        returning id, name, pass_address, created_at`;
      const issued = await insertKey(tx as unknown as Sql, row!.id);
      return { owner: toOwner(row!), ...issued! };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AdminError('ALREADY_EXISTS', `an owner with pass address ${pass} already exists`);
    throw error;
  }
}

export type OwnerListItem = OwnerRecord & { activeKeys: number; quests: number };

export async function listOwners(sql: Sql, opts: ListOptions<string>): Promise<ListPage<OwnerListItem>> {
  checkLimit(opts.limit);
  const rows = await sql<(OwnerRow & { active_keys: number; quests: number })[]>`
    select o.id, o.name, o.pass_address, o.created_at,
           (select count(*)::int from api_keys k where k.owner_id = o.id and k.revoked_at is null) as active_keys,
           (select count(*)::int from quests q where q.owner_id = o.id) as quests
    from owners o
    where ${opts.after === undefined ? sql`true` : sql`o.id > ${opts.after}`}
    order by o.id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({ ...toOwner(r), activeKeys: r.active_keys, quests: r.quests }));
}
