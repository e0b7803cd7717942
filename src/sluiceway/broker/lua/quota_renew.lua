-- Concurrency quota: extend the leases of holders (rides on the claim heartbeat); a lease
-- never moves backwards.
-- KEYS: holders
-- ARGV: new lease expiry (Unix s), holder tokens...
-- Returns one status per holder: 1 renewed, 0 gone (reaped or released).
local out = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
