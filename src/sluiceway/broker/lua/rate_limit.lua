-- Rate-limit quota: sliding window of admissions in a ZSET, one unique member per admission.
-- KEYS: window ZSET
-- ARGV: now (Unix s), window (s), limit, unique member, key TTL in ms
-- Returns {admitted (1/0), admissions in the window after}.
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then
  return {0, n}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, n + 1}
