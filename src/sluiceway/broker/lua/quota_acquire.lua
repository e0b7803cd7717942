-- Concurrency quota: take a slot for one holder unless the live count reached the limit.
-- docs/design-rules.md rules 8 and 15a: KEYS[1] stays a STRING holder count kept by deltas,
-- KEYS[2] is a ZSET of holder token -> lease expiry. Holders whose lease ended before now are
-- reaped first (DECRBY their number). A holder that already holds a slot keeps it, its lease extended.
-- KEYS: count, holders
-- ARGV: now (Unix s), limit, holder token, lease expiry (Unix s)
-- Returns {admitted (1/0), count after}.
local function reap()
  local n = redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
  if n > 0 then
    local left = redis.call('DECRBY', KEYS[1], n)
    if left < 0 then
      redis.call('SET', KEYS[1], 0)
    end
  end
end
reap()
local count = tonumber(redis.call('GET', KEYS[1])) or 0
if redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  redis.call('ZADD', KEYS[2], 'GT', ARGV[4], ARGV[3])
  return {1, count}
end
if count >= tonumber(ARGV[2]) then
  return {0, count}
end
count = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
return {1, count}
