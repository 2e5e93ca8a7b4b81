-- extend: reset the lease of a lock the caller holds. ARGV: token, ttl_ms.
-- Reply: 1 extended, 0 not held.
local v = redis.call('GET', KEYS[1])
if not v or string.match(v, '^%S+') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
