-- Claim a peeked batch in one call (claim.lua per entry) and check each won generation's
-- cancel marker, so the dequeue costs one round trip per batch instead of two per entry.
-- KEYS: pending, claimed, claim-owners, claims-idx [, request-cancel:<id> per entry]
--       (no cancel keys when they live in other slots: the caller checks those itself)
-- ARGV: per entry: member, claim key, owner token, lease expiry (Unix s), request token
-- Returns one code per entry: 1 claimed, 2 claimed and cancelled, 0 another consumer won,
-- -1 this generation is already claimed (the entry stays pending).
local out = {}
local checks = #KEYS > 4
for i = 0, #ARGV / 5 - 1 do
  local at = 5 * i
  local member, key = ARGV[at + 1], ARGV[at + 2]
  local code = 1
  if redis.call('HEXISTS', KEYS[2], key) == 1 then
    code = -1
  elseif redis.call('ZREM', KEYS[1], member) == 0 then
    code = 0
  else
    redis.call('HSET', KEYS[2], key, member)
    redis.call('HSET', KEYS[3], key, ARGV[at + 3])
    redis.call('ZADD', KEYS[4], ARGV[at + 4], key)
    if checks and redis.call('GET', KEYS[5 + i]) == ARGV[at + 5] then
      code = 2
    end
  end
  out[#out + 1] = code
end
return out
