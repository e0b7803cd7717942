-- Hand a claimed entry back to its queue unchanged (shutdown, gate wait timeout), fenced.
-- KEYS: pending, claimed, claim-owners, claims-idx
-- ARGV: claim key, owner token, score (the entry's queue score)
-- Returns 1 released, 0 fenced.
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then
  return 0
end
local member = redis.call('HGET', KEYS[2], ARGV[1])
if member then
  redis.call('ZADD', KEYS[1], ARGV[3], member)
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return 1
