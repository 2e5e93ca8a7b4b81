-- release: drop one hold; at zero delete the lock and, if waiters may be
-- queued, hand it to the first live one. ARGV: token, handoff
-- ('g' | 'n', see free in common.lua), window_ms.
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then), or {0, owner, fence, server_ms, pttl_ms} when
-- the lock was handed to a waiter: the releasing process wakes that waiter
-- at once if it is its own, without waiting for the notice.
local token, handoff, window = ARGV[1], ARGV[2], tonumber(ARGV[3])
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local o, f, n, w, rest = parse(v)
if o ~= token then return -1 end
if n > 1 then
  redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. (n - 1) .. ' ' .. w .. rest, 'KEEPTTL')
  return n - 1
end
redis.call('DEL', KEYS[1])
if w == '1' then
  local g, gf, ms, px = free(chan(), handoff, window)
  if g then return {0, g, gf, ms, px} end
end
return 0
