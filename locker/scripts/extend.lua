-- extend: reset the lease of a lock the caller holds. ARGV: token, ttl_ms.
-- Reply: 1 extended, 0 not held.
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
