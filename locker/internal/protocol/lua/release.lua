-- release: drop one hold; at zero end the lock (gone in last.lua) and, if
-- waiters may be queued, hand it to the first live one (free in
-- mutex.lua). Arguments: a_token, a_handoff ('g' | 'n', see free),
-- a_window_ms, and optionally a_sid (the caller's subscriber).
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is changed then), or {0, owner, fence, server_ms, pttl_ms} when
-- the lock was handed to a waiter: the releasing process wakes that waiter
-- at once if it is its own, and then no notice is published for it (a
-- waiter queued with sid; see grant in mutex.lua).
-- This part runs first, before the helpers are defined (each definition
-- makes a closure on every call): GETDEL takes the value, and the last
-- hold of a lock nobody waits for is released with it. Any other value
-- goes to release_held.lua (after the shared functions), which puts it
-- back or passes it on: v is the value taken.
local v = redis.call('GETDEL', k_lock)
if not v then return -1 end
local i = #a_token + 2
if string.sub(v, 1, i - 1) == a_token .. ' ' and string.find(v, '^%d+ 1 0 ', i) then
  -- Ours ("token fence 1 0 granted ends from[ label]"): the last hold,
  -- nobody queued. Told apart without parse's captures and conversions.
  -- As gone in last.lua, written out.
  if a_handoff == 'n' and k_last then
    redis.call('SET', k_last, v, 'PXAT', string.match(v, '^%d+ 1 0 %d+ (%d+)', i))
  end
  return 0
end
