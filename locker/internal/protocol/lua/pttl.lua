-- pttl: remaining lease of a lock the caller holds. Arguments: a_token.
-- Reply: milliseconds left, or -1 when not held.
local v = redis.call('GET', k_lock)
if not v then return -1 end
local l = parse(v)
if l.owner ~= a_token then return -1 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return -1 end
return math.max(l.ends - nowms, 0)
