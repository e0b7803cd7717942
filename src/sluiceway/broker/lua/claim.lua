-- Claim one pending entry for a consumer (durable dequeue; keys in docs/brokers.md).
-- KEYS: pending, claimed, claim-owners, claims-idx
-- ARGV: member, claim key (id .. "\0" .. request_token), owner token, lease expiry (Unix s)
-- Returns 1 claimed, 0 another consumer won the entry, -1 this generation is already claimed
-- (the entry stays pending until the running claim is acked, released or reclaimed).
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  return -1
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
return 1
