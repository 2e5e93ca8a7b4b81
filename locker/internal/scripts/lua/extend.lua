-- extend: reset the lease of a lock the caller holds to ttl_ms from now
-- (the value's ends with it, see value.lua). ARGV: token, ttl_ms.
-- Reply: the server's clock in ms (extended: the caller checks it against
-- its own, see backend.Clock), 0 not held.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local l = parse(v)
if l.owner ~= ARGV[1] then return 0 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return 0 end
l.ends = nowms + tonumber(ARGV[2])
put(l)
return nowms
