-- Move an unparsable pending member aside to <queue>:invalid (design rule 14), and record
-- why in the side hash <queue>:invalid:info (member digest -> JSON reason and time).
-- KEYS: pending, invalid list, invalid info hash
-- ARGV: member, digest, info JSON
-- Returns 1 moved, 0 it was no longer pending.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return 1
