-- Extend the leases of several claims held by one consumer (the heartbeat).
-- KEYS: claim-owners, claims-idx
-- ARGV: new lease expiry (Unix s), then pairs of claim key, owner token
-- Returns one status per pair: 1 renewed, 0 missing, -1 owned by someone else (stolen).
local out = {}
for i = 2, #ARGV, 2 do
  local owner = redis.call('HGET', KEYS[1], ARGV[i])
  if not owner then
    out[#out + 1] = 0
  elseif owner ~= ARGV[i + 1] then
    out[#out + 1] = -1
  else
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
    out[#out + 1] = 1
  end
end
return out
