import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, vi } from 'vitest';
import type { Sql } from '@quest/db';
import { createAccounts, createOwner, createQuest, get, post, type System, systemTest } from '@quest/testing';
import { runCli } from '@quest/testing/cli';

/**
 * The `quests` switch, end to end: switched off with `quest-admin features set`, every entry point
 * that writes refuses with QUESTS_DISABLED and writes nothing — the JSON routes (credit, batch,
 * reversal), the console (CSV upload, reversal form) and `quest-admin credit` through the API —
 * because each of them reaches the one command boundary (apps/api/src/commands/boundary.ts).
 */

const test = systemTest({ workers: 1, partitions: 2 });

/** quest-admin against the system's database, with nothing of this process's environment but PATH and HOME. */
const cli = (system: System, args: readonly string[]) =>
  runCli(args, { env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: system.db.url } });

/** A console session of the owner: its cookie and CSRF token. */
async function consoleSession(system: System, apiKey: string) {
  const signIn = await fetch(`${system.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: system.baseUrl },
    body: new URLSearchParams({ apiKey }).toString(),
  });
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${system.baseUrl}/console/quests`, { headers: { cookie } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf! };
}

async function writes(sql: Sql, questId: number) {
  const [row] = await sql<{ payouts: number; batches: number; reversals: number; requests: number }[]>`
    select (select count(*)::int from payouts where quest_id = ${questId}) as payouts,
           (select count(*)::int from batches where quest_id = ${questId}) as batches,
           (select count(*)::int from reversals where quest_id = ${questId}) as reversals,
           (select count(*)::int from allocation_requests where quest_id = ${questId}) as requests`;
  return row!;
}

describe('the quests switch', () => {
  test('off: the API, the console and quest-admin credit all refuse every write, and nothing is written', {
    timeout: 60_000,
  }, async ({ system }) => {
    const { sql } = system.db;
    const owner = await createOwner(sql);
    const questId = await createQuest(sql, { ownerId: owner.id, totalPoints: 1000 });
    const [address] = (await createAccounts(sql, 1)) as [string];
    const headers = { 'x-api-key': owner.apiKey };
    const paid = await post(system, `/quests/${questId}`, { address, points: 5 }, headers);
    expect(paid.status).toBe(200);
    const payoutId: string = paid.body.payout.id;
    const session = await consoleSession(system, owner.apiKey);
    const before = await writes(sql, questId);

    const off = await cli(system, ['features', 'set', 'quests=off']);
    expect(off.code, off.stderr).toBe(0);
    // Each API process sees a switch within 2 s: wait for it on a read.
    await vi.waitFor(async () => expect((await get(system, '/quests')).body.code).toBe('QUESTS_DISABLED'), { timeout: 10_000 });

    const api = [
      await post(system, `/quests/${questId}`, { address, points: 5 }, headers),
      await post(system, `/quests/${questId}/batches`, { allocations: [{ address, points: 1 }] }, headers),
      await post(system, `/quests/${questId}/payouts/${payoutId}/reversals`, { points: 1 }, headers),
    ];
    for (const res of api) expect([res.status, res.body.code]).toEqual([400, 'QUESTS_DISABLED']);

    const upload = await fetch(`${system.baseUrl}/console/quests/${questId}/credit`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'text/csv', 'x-csrf-token': session.csrf, origin: system.baseUrl },
      body: `address,points\n${address},1\n`,
    });
    expect([upload.status, ((await upload.json()) as { code: string }).code]).toEqual([400, 'QUESTS_DISABLED']);
    const reversal = await fetch(`${system.baseUrl}/console/quests/${questId}/payouts/${payoutId}/reverse`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: system.baseUrl },
      body: new URLSearchParams({ _csrf: session.csrf, points: '1' }).toString(),
    });
    expect(reversal.status).toBe(400);
    expect(await reversal.text()).toContain('QUESTS_DISABLED');

    const dir = await mkdtemp(join(tmpdir(), 'quest-switch-'));
    try {
      const file = join(dir, 'credits.csv');
      await writeFile(file, `address,points\n${address},1\n`);
      const args = [
        'credit',
        '--quest',
        String(questId),
        '--key',
        owner.apiKey,
        '--file',
        file,
        '--base-url',
        system.baseUrl,
        '--json',
      ];
      const credit = await cli(system, args);
      expect(credit.code).not.toBe(0);
      expect(`${credit.stdout}${credit.stderr}`).toContain('QUESTS_DISABLED');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    expect(await writes(sql, questId)).toEqual(before);

    // Switched on again, the same console upload goes through: the refusals above were the switch's.
    expect((await cli(system, ['features', 'set', 'quests=on'])).code).toBe(0);
    await vi.waitFor(async () => expect((await get(system, '/quests')).status).toBe(200), { timeout: 10_000 });
    const again = await post(system, `/quests/${questId}/payouts/${payoutId}/reversals`, { points: 1 }, headers);
    expect(again.status).toBe(200);
  });
});
