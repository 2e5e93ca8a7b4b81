-- raise: lift the fencing token of a lock the caller holds to at least
-- a_fence (Redlock writes the token it settled on back to the masters
-- that granted it: it stays in the lock's value, which a release keeps
-- in k_last, see gone in last.lua). Arguments: a_token, a_fence. Reply: 1.
local v = redis.call('GET', k_lock)
if not v then return 1 end
local l = parse(v)
if l.owner == a_token and l.fence < tonumber(a_fence) then
  l.fence = tonumber(a_fence)
  put(l)
end
return 1
