import { describe, expect, it } from 'vitest';
import { type ReplicationState, synchronousReplicationProblems } from './replication.ts';

const healthy: ReplicationState = {
  inRecovery: false,
  synchronousCommit: 'on',
  synchronousStandbyNames: 'ANY 1 (pg2, pg3)',
  standbys: [
    { name: 'pg2', state: 'streaming', syncState: 'quorum' },
    { name: 'pg3', state: 'streaming', syncState: 'quorum' },
  ],
};

describe('synchronousReplicationProblems', () => {
  it('finds none with a synchronous (or quorum) standby and synchronous_commit on or remote_write', () => {
    expect(synchronousReplicationProblems(healthy)).toEqual([]);
    expect(
      synchronousReplicationProblems({
        ...healthy,
        synchronousCommit: 'remote_write',
        standbys: [{ name: 'pg2', state: 'streaming', syncState: 'sync' }],
      }),
    ).toEqual([]);
  });

  it('reports a primary without synchronous_standby_names, with asynchronous standbys only', () => {
    expect(
      synchronousReplicationProblems({
        ...healthy,
        synchronousStandbyNames: '',
        standbys: [{ name: 'pg2', state: 'streaming', syncState: 'async' }],
      }),
    ).toEqual([expect.stringMatching(/^synchronous_standby_names is empty/)]);
  });

  it('reports synchronous_commit off or local', () => {
    for (const v of ['off', 'local']) {
      expect(synchronousReplicationProblems({ ...healthy, synchronousCommit: v })).toEqual([
        expect.stringContaining(`synchronous_commit = ${v}`),
      ]);
    }
  });

  it('reports a named standby that is not connected, or not (yet) synchronous', () => {
    expect(synchronousReplicationProblems({ ...healthy, standbys: [] })).toEqual([
      expect.stringMatching(/no synchronous standby is connected .*no standby streams/),
    ]);
    expect(
      synchronousReplicationProblems({ ...healthy, standbys: [{ name: 'pg2', state: 'catchup', syncState: 'potential' }] }),
    ).toEqual([expect.stringMatching(/standbys: pg2 potential/)]);
  });

  it('says when the role cannot see sync_state, and when the server is a standby', () => {
    expect(synchronousReplicationProblems({ ...healthy, standbys: [{ name: 'pg2', state: null, syncState: null }] })).toEqual([
      expect.stringContaining('grant it pg_monitor'),
    ]);
    expect(synchronousReplicationProblems({ ...healthy, inRecovery: true })).toEqual([expect.stringContaining('standby')]);
  });
});
