-- Redeliver claims whose lease ended before now: the member re-enters its queue at its deadline score.
-- KEYS: pending, claimed, claim-owners, claims-idx
-- ARGV: now (Unix s, from the caller), at most this many claims
-- Returns the number of claims redelivered. An entry whose deadline cannot be read re-enters
-- at score 0 (the head), where ingest turns it into an error result or the invalid list.
local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, ck in ipairs(expired) do
  local member = redis.call('HGET', KEYS[2], ck)
  if member then
    local score = 0
    local ok, entry = pcall(cjson.decode, member)
    if ok and type(entry) == 'table' and type(entry.data) == 'table' then
      score = tonumber(entry.data.deadline) or 0
    end
    redis.call('ZADD', KEYS[1], score, member)
  end
  redis.call('HDEL', KEYS[2], ck)
  redis.call('HDEL', KEYS[3], ck)
  redis.call('ZREM', KEYS[4], ck)
end
return #expired
