-- pttl: remaining lease of a lock the caller holds. ARGV: token.
-- Reply: milliseconds left, or -1 when not held.
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return -1 end
return redis.call('PTTL', KEYS[1])
