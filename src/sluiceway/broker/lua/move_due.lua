-- Move one due retry back to its queue at its original deadline score (docs/design-rules.md rule 7).
-- KEYS: retry set, pending
-- ARGV: member, queue score
-- Returns 1 moved, 0 another mover took it first.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
