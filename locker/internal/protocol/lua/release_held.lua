-- release, continued after the shared functions (see release.lua, whose
-- GETDEL took v): the lock is not the caller's, another hold stays, or
-- waiters may be queued. A value that stays goes back with its expiry
-- (restore, put in value.lua); the last hold's value is kept for Redlock
-- (gone in last.lua).
local l = parse(v, true)
if l.owner ~= a_token then
  restore(l, v)
  return -1
end
-- The clock is needed only where the lease may be over or passed on.
local nowus = 0
if l.queue ~= 0 then nowus = now_us(redis.call('TIME')) end
if not held(l, math.floor(nowus / 1000)) then
  -- A lease that is over, kept for the queue: not the caller's any more.
  restore(l, v)
  return -1
end
if l.holds > 1 then
  l.holds = l.holds - 1
  put(l)
  return l.holds
end
gone(l, a_handoff, v)
if l.queue == 0 then return 0 end
local g, gf, ms, px = free(l, a_handoff, tonumber(a_window_ms), nowus, a_sid)
if g then return {0, g, gf, ms, px} end
return 0
