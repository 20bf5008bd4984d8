-- Claim an Idempotency-Key for a body digest: the first digest is kept for ARGV[2] ms; 1 when the
-- key is new or holds this digest, 0 when it holds another (IDEMPOTENCY_KEY_REUSED).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
local stored = redis.call('GET', KEYS[1])
if stored == false or stored == ARGV[1] then return 1 end
return 0
