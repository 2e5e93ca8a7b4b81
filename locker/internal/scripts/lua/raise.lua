-- raise: lift the fencing token of a lock the caller holds to at least
-- ARGV[2] (Redlock writes the token it settled on back to the masters
-- that granted it: it stays in the lock's value, which a release keeps
-- in KEYS[4], see gone in value.lua). ARGV: token, fence. Reply: 1.
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
local l = parse(v)
if l.owner == ARGV[1] and l.fence < tonumber(ARGV[2]) then
  l.fence = tonumber(ARGV[2])
  put(l)
end
return 1
