-- Lease ARGV[1] units plus a spare block from the window's count at KEYS[1] (at most ARGV[2] a
-- window of ARGV[3] ms, a spare block of at most ARGV[4]): {units granted, ms left, count after}.
local want = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local maxLease = tonumber(ARGV[4])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local ttl = redis.call('PTTL', KEYS[1])
if count + want > max then
  if ttl < 0 then ttl = window end
  return {0, ttl, count}
end
local grant = want + math.max(0, math.min(maxLease, math.floor((max - count - want) / 8)))
count = redis.call('INCRBY', KEYS[1], grant)
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  ttl = window
end
return {grant, ttl, count}
