-- sem_leave: a queued waiter gives up. If it was granted a permit meanwhile,
-- mode 'k' keeps it (reply as sem_acquire's) and mode 'r' releases it to
-- the next waiter. ARGV: token, mode, handoff (unused), window_ms.
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
redis.call('ZREM', KEYS[2], token)
redis.call('HDEL', KEYS[3], token, '~' .. token)
if redis.call('EXISTS', KEYS[2]) == 1 then
  -- A read/write queue's head may have waited only for this waiter (a
  -- writer that gave up, with readers behind it).
  hand_on(nowms, window)
end
return {0, 0, 0, sem_left(nowms), 0}
