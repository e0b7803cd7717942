-- Drop a claim whose result was already pushed elsewhere (cluster mode, other slot), fenced.
-- KEYS: claimed, claim-owners, claims-idx
-- ARGV: claim key, owner token
-- Returns 1 dropped, 0 fenced.
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
