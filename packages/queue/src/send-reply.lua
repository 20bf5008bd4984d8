-- Append a reply to an API process's reply stream (replies.ts), only while the stream exists: the
-- API process creates it and keeps it alive with an expiry, so a reply to a process that is gone
-- never re-creates (and leaks) its stream.
-- KEYS[1]: the stream. ARGV: its approximate MAXLEN, the reply token, the reply (JSON).
-- Returns 1 when appended, 0 when the stream is gone.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'j', ARGV[2], 'r', ARGV[3])
  return 1
end
return 0
