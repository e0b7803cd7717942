-- Claim a peeked batch in one call (claim.lua per entry) and check each won generation's
-- cancel marker, so the dequeue costs one round trip per batch instead of two per entry.
-- The writes are batched (one ZREM, two HSETs, one ZADD per call), so a batch publishes one
-- keyspace event per key instead of one per entry.
-- KEYS: pending, claimed, claim-owners, claims-idx [, request-cancel:<id> per entry]
--       (no cancel keys when they live in other slots: the caller checks those itself)
-- ARGV: per entry: member, claim key, owner token, lease expiry (Unix s), request token
-- Returns one code per entry: 1 claimed, 2 claimed and cancelled, 0 another consumer won,
-- -1 this generation is already claimed (the entry stays pending).
local out, checks = {}, #KEYS > 4
local members, claimed, owners, expiries = {}, {}, {}, {}
local keys_won, members_won = {}, {}
for i = 0, #ARGV / 5 - 1 do
  local at = 5 * i
  local member, key = ARGV[at + 1], ARGV[at + 2]
  local code = 1
  if keys_won[key] or redis.call('HEXISTS', KEYS[2], key) == 1 then
    code = -1
  elseif members_won[member] or not redis.call('ZSCORE', KEYS[1], member) then
    code = 0
  else
    keys_won[key], members_won[member] = true, true
    members[#members + 1] = member
    claimed[#claimed + 1] = key
    claimed[#claimed + 1] = member
    owners[#owners + 1] = key
    owners[#owners + 1] = ARGV[at + 3]
    expiries[#expiries + 1] = ARGV[at + 4]
    expiries[#expiries + 1] = key
    if checks and redis.call('GET', KEYS[5 + i]) == ARGV[at + 5] then
      code = 2
    end
  end
  out[#out + 1] = code
end
-- unpack in slices: Lua's stack holds a few thousand values at most.
local function write(command, key, args)
  for first = 1, #args, 1000 do
    redis.call(command, key, unpack(args, first, math.min(first + 999, #args)))
  end
end
write('ZREM', KEYS[1], members)
write('HSET', KEYS[2], claimed)
write('HSET', KEYS[3], owners)
write('ZADD', KEYS[4], expiries)
return out
