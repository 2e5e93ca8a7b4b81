-- acquire, bridged (see bridge.lua): a name a plain locker holds is busy.
-- Nothing is written: a waiting caller is told it is queued and re-checks
-- after the pttl replied, and queues then; a re-entry finds its hold
-- gone. The plain lockers publish nothing when they release, and retry
-- every few milliseconds themselves, so the pttl is at most PLAIN_POLL ms
-- (less when the plain lock expires sooner): a waiter that looked only at
-- the plain lock's expiry would find it taken again, every time.
local PLAIN_POLL = 10
-- clock and found: what acquire_free.lua hands acquire.lua elsewhere (a
-- bridge runs the general path alone). A bridge is single-deployment
-- only, so no lock's last value is kept (last.lua): last finds none.
local clock, found
local function last() return nil end
if foreign then
  local t = redis.call('TIME')
  local nowms = now_ms(t)
  local left = redis.call('PTTL', k_plain)
  if left < 0 or left > PLAIN_POLL then left = PLAIN_POLL end
  if a_mode == 'e' then return {0, 0, 0, -2, 0} end
  if tonumber(a_wait_ms) > 0 or a_mode == 'r' then return {0, 0, 0, left, nowms} end
  return {0, 0, 0, left, 0}
end
