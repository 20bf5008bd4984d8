-- One pool heartbeat (membership.ts), atomic and on Redis's clock, so clock skew between hosts
-- does not matter.
-- KEYS[1]: the members, a sorted set scored by each member's expiry time (ms).
-- KEYS[2]: every worker's last health report, a hash of `<redis ms>|<latency ms>|<verdict>`.
-- ARGV: member id, TTL (ms), 1 to renew the member or 0 to withdraw it, its report.
-- Returns the live members and the fresh reports (field, value, …); stale ones are dropped.
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
