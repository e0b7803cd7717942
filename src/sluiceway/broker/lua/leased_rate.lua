-- redis-leased-rate: take one token from a pool-wide bucket whose rate an external controller
-- leases. Validates the whole lease first; any problem admits nothing (fail closed).
-- KEYS: control (HASH written by the controller), state (HASH: tokens, last_ms)
-- ARGV: now (unscaled wall milliseconds, from the caller), pool id, burst seconds, api version
-- Returns {1, "ok"} when a token was taken, else {0, reason}.
local c = redis.call('HMGET', KEYS[1], 'api_version', 'pool_id', 'max_admission_rps',
  'valid_until_unix_ms', 'decision_id')
if c[1] ~= ARGV[4] then return {0, 'api_version'} end
if c[2] ~= ARGV[2] then return {0, 'pool_id'} end
local rate = tonumber(c[3])
if not rate or rate ~= rate or rate < 0 or rate == math.huge then
  return {0, 'max_admission_rps'}
end
local valid_until = tonumber(c[4])
if not valid_until then return {0, 'valid_until_unix_ms'} end
if not c[5] or c[5] == '' then return {0, 'decision_id'} end
local now = tonumber(ARGV[1])
if valid_until <= now then return {0, 'expired'} end
if rate == 0 then return {0, 'paused'} end
local capacity = math.max(1, rate * tonumber(ARGV[3]))
local s = redis.call('HMGET', KEYS[2], 'tokens', 'last_ms')
local tokens, last = tonumber(s[1]), tonumber(s[2])
if not tokens or not last then
  tokens, last = capacity, now
end
if now > last then
  tokens = math.min(capacity, tokens + (now - last) * rate / 1000)
  last = now
end
local taken = 0
if tokens >= 1 then
  tokens = tokens - 1
  taken = 1
end
redis.call('HSET', KEYS[2], 'tokens', tostring(tokens), 'last_ms', tostring(last))
redis.call('PEXPIRE', KEYS[2], math.max(1000, valid_until - now + 1000))
if taken == 1 then return {1, 'ok'} end
return {0, 'empty'}
