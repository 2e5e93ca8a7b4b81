-- acquire, bridged (see bridge.lua): a name a plain locker holds is busy.
-- Nothing is written: a waiting caller is told it is queued and re-checks
-- when the plain lock's expiry comes (its pttl), and queues then; a
-- re-entry finds its hold gone.
local clock, found
if foreign then
  local t = redis.call('TIME')
  local nowms = now_ms(t)
  local left = redis.call('PTTL', KEYS[3])
  if left < 0 then left = 1000 end -- no expiry: look again in a second
  if ARGV[4] == 'e' then return {0, 0, 0, -2, 0} end
  if tonumber(ARGV[3]) > 0 or ARGV[4] == 'r' then return {0, 0, 0, left, nowms} end
  return {0, 0, 0, left, 0}
end
