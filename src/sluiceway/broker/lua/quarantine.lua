-- Move an unparsable pending member aside to <queue>:invalid (docs/design-rules.md rule 14).
-- KEYS: pending, invalid list
-- ARGV: member
-- Returns 1 moved, 0 it was no longer pending.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('LPUSH', KEYS[2], ARGV[1])
return 1
