-- Concurrency quota: drop holders whose lease ended before now and lower the count by their number.
-- KEYS: count, holders
-- ARGV: now (Unix s)
-- Returns the number of holders reaped.
local n = redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
if n > 0 then
  if redis.call('DECRBY', KEYS[1], n) < 0 then
    redis.call('SET', KEYS[1], 0)
  end
end
return n
