-- Delete request markers that still hold this generation's token (a newer one is kept).
-- KEYS: marker keys (request-active:<id>, request-cancel:<id>)
-- ARGV: request token
-- Returns how many were deleted.
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    n = n + 1
  end
end
return n
