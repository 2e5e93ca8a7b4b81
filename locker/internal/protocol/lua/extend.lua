-- extend: reset the lease of a lock the caller holds to ttl_ms from now
-- (the value's ends with it, see value.lua). Arguments: a_token, a_ttl_ms.
-- Reply: the server's clock in ms (extended: the caller checks it against
-- its own, see backend.Clock), 0 not held.
local v = redis.call('GET', k_lock)
if not v then return 0 end
local l = parse(v)
if l.owner ~= a_token then return 0 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return 0 end
l.ends = nowms + tonumber(a_ttl_ms)
put(l)
return nowms
