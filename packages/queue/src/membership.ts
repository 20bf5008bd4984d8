import type { Redis } from 'ioredis';
import { healthKey, membersKey } from './names.ts';

/**
 * The pool's membership in Redis (pool.ts): a sorted set of members scored by their expiry time,
 * beside a hash of every worker's last health report, renewed by one script per heartbeat.
 */

/**
 * Renews (ARGV[3] = 1) or withdraws (0) the member and records its health report, then returns the
 * live members and the fresh reports of every worker, atomically and on Redis's clock (so clock
 * skew between hosts does not matter): members are a sorted set scored by their expiry time;
 * reports (`<redis ms>|<latency ms>|<verdict>`) a hash whose stale fields are dropped here.
 */
const HEARTBEAT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], now + ttl, ARGV[1]) else redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[2], ARGV[1], now .. '|' .. ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local all = redis.call('HGETALL', KEYS[2])
local reports = {}
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], '^(%d+)|'))
  if at == nil or at < now - ttl then
    redis.call('HDEL', KEYS[2], all[i])
  else
    table.insert(reports, all[i])
    table.insert(reports, all[i + 1])
  end
end
return { redis.call('ZRANGE', KEYS[1], 0, -1), reports }
`;

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
  redis: Redis,
  prefix: string,
  m: { memberId: string; ttlMs: number; join: boolean; report: string },
): Promise<{ members: string[]; reports: string[] }> {
  const [members, reports] = (await redis.eval(
    HEARTBEAT_SCRIPT,
    2,
    membersKey(prefix),
    healthKey(prefix),
    m.memberId,
    String(m.ttlMs),
    m.join ? '1' : '0',
    m.report,
  )) as [string[], string[]];
  return { members, reports };
}

/** Leave the membership at once (a graceful stop). */
export async function leaveMembership(redis: Redis, prefix: string, memberId: string): Promise<void> {
  await Promise.all([redis.zrem(membersKey(prefix), memberId), redis.hdel(healthKey(prefix), memberId)]);
}

/** Pool members alive now (heartbeat not expired), on Redis's clock. */
export async function liveMembers(redis: Redis, prefix: string): Promise<number> {
  const [seconds, micros] = await redis.time();
  return redis.zcount(membersKey(prefix), Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), '+inf');
}
