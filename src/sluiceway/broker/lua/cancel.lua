-- Mark the current generation of a request cancelled: copy its active token to the cancel key.
-- KEYS: request-active:<id>, request-cancel:<id>
-- ARGV: cancel marker TTL in ms
-- Returns 1 marked, 0 no active generation.
local token = redis.call('GET', KEYS[1])
if not token then
  return 0
end
redis.call('SET', KEYS[2], token, 'PX', ARGV[1])
return 1
