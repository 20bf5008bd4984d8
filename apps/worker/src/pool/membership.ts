import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { healthKey, membersKey } from '@quest/queue';

/**
 * The pool's membership in Redis: a sorted set of members scored by their expiry time, beside a
 * hash of every worker's last health report, renewed by one script per heartbeat (heartbeat.lua).
 */
const HEARTBEAT_SCRIPT = readFileSync(new URL('./heartbeat.lua', import.meta.url), 'utf8');

type MembershipRedis = Redis & {
  questHeartbeat(
    members: string,
    health: string,
    id: string,
    ttlMs: string,
    join: string,
    report: string,
  ): Promise<[string[], string[]]>;
};

/** The connection with the heartbeat script defined on it (EVALSHA, loaded once per connection). */
export function membershipConnection(redis: Redis): MembershipRedis {
  if (!('questHeartbeat' in redis)) redis.defineCommand('questHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT_SCRIPT });
  return redis as MembershipRedis;
}

/** The smoothed latencies of the other live members whose last report says healthy. */
export function healthyPeerLatencies(members: readonly string[], reports: readonly string[], self: string): number[] {
  const live = new Set(members);
  const peers: number[] = [];
  for (let i = 0; i + 1 < reports.length; i += 2) {
    const [, latency, verdict] = reports[i + 1]!.split('|');
    if (reports[i] !== self && live.has(reports[i]!) && verdict === 'healthy') peers.push(Number(latency));
  }
  return peers.filter(Number.isFinite);
}

/** One heartbeat: renew (`join`) or withdraw this member with its report; the live members and fresh reports. */
export async function renewMembership(
  redis: MembershipRedis,
  prefix: string,
  m: { memberId: string; ttlMs: number; join: boolean; report: string },
): Promise<{ members: string[]; reports: string[] }> {
  const [members, reports] = await redis.questHeartbeat(
    membersKey(prefix),
    healthKey(prefix),
    m.memberId,
    String(m.ttlMs),
    m.join ? '1' : '0',
    m.report,
  );
  return { members, reports };
}

/** Leave the membership at once (a graceful stop). */
export async function leaveMembership(redis: Redis, prefix: string, memberId: string): Promise<void> {
  await Promise.all([redis.zrem(membersKey(prefix), memberId), redis.hdel(healthKey(prefix), memberId)]);
}
