-- release: drop one hold; at zero delete the lock and hand it to the first
-- live waiter. ARGV: token, channel. Reply: holds left (>= 0), or -1 when the
-- caller does not hold the lock (nothing is touched then).
local token, channel = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[1], 'o') ~= token then return -1 end
local n = redis.call('HINCRBY', KEYS[1], 'n', -1)
if n > 0 then return n end
redis.call('DEL', KEYS[1])
grant(channel, redis.call('TIME'))
return 0
