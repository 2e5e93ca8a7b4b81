-- release: drop one hold; at zero end the lock (gone in value.lua) and, if
-- waiters may be queued, hand it to the first live one
-- (release_handoff.lua). ARGV: token, handoff ('g' | 'n', see free in
-- common.lua), window_ms (read by release_handoff.lua).
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then), or {0, owner, fence, server_ms, pttl_ms} when
-- the lock was handed to a waiter: the releasing process wakes that waiter
-- at once if it is its own, without waiting for the notice.
-- This part runs first, before value.lua's and common.lua's helpers are
-- defined (each definition makes a closure on every call): the last hold
-- of a lock nobody waits for is released without them
-- (release_held.lua and release_handoff.lua follow).
local token = ARGV[1]
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local i = #token + 2
if string.sub(v, 1, i - 1) == token .. ' ' and (string.find(v, '^%d+ 1 0 ', i) or string.find(v, '^%d+ 1 0$', i)) then
  -- Ours ("token fence 1 0[ granted[ label]]"): the last hold, nobody
  -- waiting. Told apart without parse's captures and conversions. As gone
  -- in value.lua, written out.
  if ARGV[2] == 'n' and KEYS[4] then
    redis.call('RENAME', KEYS[1], KEYS[4])
  else
    redis.call('DEL', KEYS[1])
  end
  return 0
end
