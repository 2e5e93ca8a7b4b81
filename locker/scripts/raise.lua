-- raise: lift the fencing counter to at least ARGV[1] (Redlock writes the
-- token it settled on back to the masters that granted it). Same layout as
-- common.lua: KEYS[2] is the counter. Reply: 1.
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
if cur < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', 3600000)
end
return 1
