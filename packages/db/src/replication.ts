import type { Sql } from './client.ts';

/**
 * Whether a commit on this server is on a second machine before it is acknowledged: what the
 * worker checks at start-up (docs/high-availability.md). A 200 means a payout is committed; it is
 * on two machines only when the primary waits for a synchronous standby.
 */
export interface ReplicationState {
  /** The server is itself a standby (then nothing can be written on it). */
  inRecovery: boolean;
  /** This session's `synchronous_commit` (per role or database settings included). */
  synchronousCommit: string;
  synchronousStandbyNames: string;
  /** pg_stat_replication's rows; `syncState` is null without the pg_monitor role (or superuser). */
  standbys: { name: string; state: string | null; syncState: string | null }[];
}

export async function readReplicationState(sql: Sql): Promise<ReplicationState> {
  const [settings] = await sql<{ in_recovery: boolean; synchronous_commit: string; synchronous_standby_names: string }[]>`
    select pg_is_in_recovery() as in_recovery,
           current_setting('synchronous_commit') as synchronous_commit,
           current_setting('synchronous_standby_names') as synchronous_standby_names`;
  const standbys = await sql<{ name: string; state: string | null; sync_state: string | null }[]>`
    select application_name as name, state, sync_state from pg_stat_replication`;
  return {
    inRecovery: settings!.in_recovery,
    synchronousCommit: settings!.synchronous_commit,
    synchronousStandbyNames: settings!.synchronous_standby_names,
    standbys: standbys.map((s) => ({ name: s.name, state: s.state, syncState: s.sync_state })),
  };
}

/**
 * What stands between an acknowledged commit and a second machine, one readable line each; empty
 * when a synchronous standby confirms every commit. `remote_write` counts (the standby has the WAL
 * in its memory, which survives losing the primary); `local` and `off` do not.
 */
export function synchronousReplicationProblems(s: ReplicationState): string[] {
  const problems: string[] = [];
  if (s.inRecovery) return ['the server is a standby (in recovery): DATABASE_URL must reach the primary'];
  if (s.synchronousCommit === 'off' || s.synchronousCommit === 'local') {
    problems.push(`synchronous_commit = ${s.synchronousCommit}: a commit is acknowledged before any standby has it`);
  }
  if (s.synchronousStandbyNames.trim() === '') {
    problems.push('synchronous_standby_names is empty: no standby confirms a commit before it is acknowledged');
    return problems;
  }
  const sync = s.standbys.filter((x) => x.syncState === 'sync' || x.syncState === 'quorum');
  if (s.standbys.length > 0 && s.standbys.every((x) => x.syncState === null)) {
    problems.push(
      "pg_stat_replication's sync_state is hidden from this role: grant it pg_monitor to let the check see the standbys",
    );
  } else if (sync.length === 0) {
    problems.push(
      `no synchronous standby is connected (synchronous_standby_names = '${s.synchronousStandbyNames}'; ` +
        `${s.standbys.length === 0 ? 'no standby streams' : `standbys: ${s.standbys.map((x) => `${x.name} ${x.syncState}`).join(', ')}`}): ` +
        'commits wait until one is',
    );
  }
  return problems;
}
