-- Finish a claim: push its result and drop the claim in one step, fenced by the owner token.
-- KEYS: claimed, claim-owners, claims-idx, result list [, request-active:<id>, request-cancel:<id>]
-- ARGV: claim key, owner token, result record, result TTL in ms (0 = none), request token
-- Returns 1 pushed, 0 fenced (stale owner: the claim was reclaimed or never existed).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('LPUSH', KEYS[4], ARGV[3])
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[4], ttl)
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
for i = 5, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[5] then
    redis.call('DEL', KEYS[i])
  end
end
return 1
