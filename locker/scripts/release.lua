-- release: drop one hold; at zero end the lock (gone in value.lua) and, if
-- waiters may be queued, hand it to the first live one
-- (release_handoff.lua). ARGV: token, handoff ('g' | 'n', see free in
-- common.lua), window_ms (read by release_handoff.lua).
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then), or {0, owner, fence, server_ms, pttl_ms} when
-- the lock was handed to a waiter: the releasing process wakes that waiter
-- at once if it is its own, without waiting for the notice.
-- This part runs before common.lua (see value.lua): a lock nobody waits
-- for is released without defining the hand-over's helpers.
local token = ARGV[1]
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local i = #token + 2
if string.sub(v, 1, i - 1) == token .. ' ' and (string.find(v, '^%d+ 1 0 ', i) or string.find(v, '^%d+ 1 0$', i)) then
  -- Ours ("token fence 1 0[ granted[ label]]"): the last hold, nobody
  -- waiting. Told apart without parse's captures and conversions.
  gone(ARGV[2])
  return 0
end
local o, f, n, w, rest = parse(v)
if o ~= token then return -1 end
if n > 1 then
  redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. (n - 1) .. ' ' .. w .. rest, 'KEEPTTL')
  return n - 1
end
-- With waiters on one node the lock is not deleted here: it goes to the
-- queue's head (free in common.lua, after release_handoff.lua).
if w ~= '1' or ARGV[2] ~= 'g' then gone(ARGV[2]) end
if w ~= '1' then return 0 end
