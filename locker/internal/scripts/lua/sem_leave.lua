-- sem_leave: a queued waiter gives up. If it was granted a permit meanwhile,
-- mode 'k' keeps it (reply as sem_acquire's) and mode 'r' releases it to
-- the next waiter. ARGV as leave.lua's: token, mode, handoff (unused),
-- window_ms, then the waiter's ttl_ms, wait_ms, sid and optionally label
-- (its queue entry).
local token, mode, window = ARGV[1], ARGV[2], tonumber(ARGV[4])
local nowms = now_ms(redis.call('TIME'))
local f, n, left = sem_held(token, nowms)
if f then
  if mode == 'k' then
    return {1, tonumber(f), n, left, 0}
  end
  sem_drop(token, nowms, window, hand_on)
  return {0, 0, 0, -2, 0}
end
sem_marked()
if ARGV[7] then -- a caller that never queued may pass no entry
  redis.call('ZREM', KEYS[2], entry(token, ARGV[6], ARGV[5], ARGV[7], ARGV[8]))
end
redis.call('HDEL', KEYS[3], '~' .. token) -- a read/write waiter's kind
if redis.call('EXISTS', KEYS[2]) == 1 then
  -- A read/write queue's head may have waited only for this waiter (a
  -- writer that gave up, with readers behind it).
  hand_on(nowms, window)
end
return {0, 0, 0, sem_left(nowms), 0}
