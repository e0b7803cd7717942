-- Concurrency quota: give back one holder's slot. Idempotent: a second release of the same
-- holder (a retried call after a lost reply) changes nothing.
-- KEYS: count, holders
-- ARGV: holder token
-- Returns 1 released, 0 the holder was not there (already released or reaped).
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
if redis.call('DECR', KEYS[1]) < 0 then
  redis.call('SET', KEYS[1], 0)
end
return 1
