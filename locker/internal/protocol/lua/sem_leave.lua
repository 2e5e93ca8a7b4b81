-- sem_leave: a queued waiter gives up. If it was granted a permit meanwhile,
-- mode 'k' keeps it (reply as sem_acquire's) and mode 'r' releases it to
-- the next waiter. Arguments as leave.lua's: a_token, a_mode, a_handoff
-- (unused), a_window_ms, then the waiter's a_ttl_ms, a_wait_ms, a_sid and
-- optionally a_label (its queue entry).
local window = tonumber(a_window_ms)
local nowms = now_ms(redis.call('TIME'))
local f, n, left = sem_held(a_token, nowms)
if f then
  if a_mode == 'k' then
    return {1, tonumber(f), n, left, 0}
  end
  sem_drop(a_token, nowms, window, hand_on)
  return {0, 0, 0, -2, 0}
end
sem_marked()
if a_sid then -- a caller that never queued may pass no entry
  redis.call('ZREM', k_queue, entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label))
end
redis.call('HDEL', k_records, '~' .. a_token) -- a read/write waiter's kind
if redis.call('EXISTS', k_queue) == 1 then
  -- A read/write queue's head may have waited only for this waiter (a
  -- writer that gave up, with readers behind it).
  hand_on(nowms, window)
end
return {0, 0, 0, sem_left(nowms), 0}
