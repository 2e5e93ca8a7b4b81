-- force: free a mutex whoever holds it (Locker.ForceRelease), as if its
-- holder had released its last hold: the queue's head gets it and is told,
-- with a token larger than the freed lock's.
-- Arguments: a_channel (the control channel), a_reason, a_handoff ('g',
-- see free in mutex.lua), a_window_ms. The holder's Locker is told "owner
-- reason" on the control channel.
-- Reply: {} when the lock is not held (nothing is changed), else {owner,
-- "fence holds granted[ label]", grantee or '', its fence, server_ms,
-- pttl_ms}.
local v = redis.call('GETDEL', k_lock)
if not v then return {} end
local l = parse(v, true)
local nowus = now_us(redis.call('TIME'))
if not held(l, math.floor(nowus / 1000)) then
  restore(l, v) -- a lease that is over, kept for the queue
  return {}
end
redis.call('PUBLISH', a_channel, l.owner .. ' ' .. a_reason)
local about = fmt(l.fence) .. ' ' .. fmt(l.holds) .. ' ' .. l.granted
if l.label ~= '' then about = about .. ' ' .. l.label end
local out = {l.owner, about, '', 0, 0, 0}
if l.queue ~= 0 then
  local g, gf, ms, px = free(l, a_handoff, tonumber(a_window_ms), nowus)
  if g then
    out[3], out[4], out[5], out[6] = g, gf, ms, px
  end
end
return out
