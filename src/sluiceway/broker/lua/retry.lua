-- Park a claimed entry in the retry set until its backoff ends, and drop the claim, fenced.
-- KEYS: claimed, claim-owners, claims-idx, retry set
-- ARGV: claim key, owner token, member to park (retry count bumped), due time (Unix s)
-- Returns 1 parked, 0 fenced.
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[3])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
