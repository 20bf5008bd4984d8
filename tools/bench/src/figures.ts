/** Reads + writes of the given roles. */
export function ioCalls(io: Record<string, { reads: number; writes: number }>, roles: readonly string[]): number {
  return roles.reduce((t, r) => t + (io[r]?.reads ?? 0) + (io[r]?.writes ?? 0), 0);
}

export const perCredit = (n: number, credits: number) => (credits ? n / credits : null);

/** "api 2.1 + 2.0, workers 7.0 + 6.1, redis-server …" per credit. */
export function ioNote(io: Record<string, { reads: number; writes: number }>, credits: number): string {
  return Object.entries(io)
    .filter(([, v]) => (v.reads + v.writes) / credits >= 0.05)
    .map(([role, v]) => `${role} ${(v.reads / credits).toFixed(1)} + ${(v.writes / credits).toFixed(1)}`)
    .join(', ');
}

/**
 * CPU milliseconds per credit of one side of a comparison, over every process that side runs
 * (PostgreSQL's backends and shared work included; the load generator and other people's
 * processes excluded): `service` = API + workers + Redis + their PostgreSQL work; `reference` = the
 * reference process + its PostgreSQL work; `peer` = the obvious-queue peer's API and worker + Redis
 * + its PostgreSQL work; `limit` = the bench's limit driver + its transactions. Redis is one server
 * for the service and the peer: each side's figure includes what the other, idle, sent it meanwhile.
 */
export function cpuPerCredit(
  cpu: Record<string, number>,
  credits: number,
  side: 'service' | 'reference' | 'peer' | 'limit',
): number | null {
  if (!credits) return null;
  let total = 0;
  for (const [group, seconds] of Object.entries(cpu)) {
    if (group.startsWith('other')) continue;
    const owner = sideOf(group);
    if (owner === side || owner === 'shared' || (group === 'redis-server' && side === 'peer')) total += seconds;
  }
  return (total * 1000) / credits;
}

/** Which side a CPU group (cpuSnapshot's and measured()'s labels) works for; Redis counts as the service's. */
function sideOf(group: string): 'service' | 'reference' | 'peer' | 'limit' | 'shared' | 'checks' {
  if (group === 'postgres (shared: WAL, checkpoints)' || group === 'postgres: autovacuum') return 'shared';
  if (group === 'reference' || group === 'postgres: reference queries') return 'reference';
  if (group.startsWith('peer-') || group === 'postgres: peer transactions') return 'peer';
  if (group.startsWith('bench (') || group === 'postgres: limit transactions') return 'limit';
  if (group === 'postgres: bench checks') return 'checks';
  return 'service';
}

/** CPU used per process group during a run and, given the number of credits, per credit (µs). */
export function cpuNote(label: string, elapsedS: number, cpu: Record<string, number>, credits?: number): string {
  const parts = Object.entries(cpu)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(1)} s (${Math.round((100 * v) / elapsedS)}%)`);
  let per = '';
  if (credits) {
    const groups: Record<string, number> = {};
    for (const [k, v] of Object.entries(cpu)) {
      if (k.startsWith('other')) continue;
      const g = k.startsWith('bench-w') ? 'workers' : k.startsWith('bench (') ? 'bench' : k.split(/[ :]/)[0]!;
      groups[g] = (groups[g] ?? 0) + v;
    }
    const total = Object.values(groups).reduce((a, b) => a + b, 0);
    per = `; per credit: ${Object.entries(groups)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${Math.round((v * 1e6) / credits)} µs`)
      .join(', ')} (total ${Math.round((total * 1e6) / credits)} µs)`;
  }
  return `${label}: CPU over ${elapsedS.toFixed(1)} s wall: ${parts.join(', ')}${per}`;
}
