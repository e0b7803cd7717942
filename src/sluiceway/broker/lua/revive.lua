-- Withdraw the cancellation of the current generation of a request (a client re-attaching).
-- KEYS: request-active:<id>, request-cancel:<id>
-- Returns 1 withdrawn, 0 nothing to withdraw (no active generation, or not cancelled).
local token = redis.call('GET', KEYS[1])
if not token or redis.call('GET', KEYS[2]) ~= token then
  return 0
end
redis.call('DEL', KEYS[2])
return 1
