-- raise: lift the fencing token of a lock the caller holds to at least
-- ARGV[2] (Redlock writes the token it settled on back to the masters
-- that granted it: it stays in the lock's value, which a release keeps
-- in KEYS[4], see gone in value.lua). ARGV: token, fence. Reply: 1.
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
local o, f, n, w, rest = parse(v)
if o == ARGV[1] and tonumber(f) < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], o .. ' ' .. ARGV[2] .. ' ' .. n .. ' ' .. w .. rest, 'KEEPTTL')
end
return 1
