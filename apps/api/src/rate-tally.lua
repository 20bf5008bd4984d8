-- Add ARGV[1] to the window's count at KEYS[1] (0: read it); the window of ARGV[2] ms starts at
-- the first hit: {count, ms left in the window}.
local count = tonumber(ARGV[1]) > 0 and redis.call('INCRBY', KEYS[1], ARGV[1]) or tonumber(redis.call('GET', KEYS[1]) or '0')
local ttl = redis.call('PTTL', KEYS[1])
if count > 0 and ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {count, ttl}
