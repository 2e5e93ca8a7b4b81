-- leave: a queued waiter gives up. If the lock was handed to it meanwhile,
-- mode 'k' keeps it (reply as acquire's) and mode 'r' releases it to the next
-- waiter. Arguments: a_token, a_mode, a_handoff ('g' | 'n', see free in
-- mutex.lua), a_window_ms, then the waiter's a_ttl_ms, a_wait_ms, a_sid
-- and optionally a_label as its acquire calls passed them (its queue
-- entry: entry in common.lua). Reply: {status, fence, holds, pttl_ms, 0};
-- pttl_ms is the holder's lease left, -2 when nobody holds.
local window = tonumber(a_window_ms)
local nowus = now_us(redis.call('TIME'))
local nowms = math.floor(nowus / 1000)
local v = redis.call('GET', k_lock)
local l = v and parse(v)
if l and not held(l, nowms) then l = nil end
if l and l.owner == a_token then
  if a_mode == 'k' then
    return {1, l.fence, l.holds, l.ends - nowms, 0}
  end
  redis.call('DEL', k_lock)
  if l.queue ~= 0 then free(l, a_handoff, window, nowus) end
  return {0, 0, 0, -2, 0}
end
if a_sid then -- a caller that never queued may pass no entry
  redis.call('ZREM', k_queue, entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label))
end
return {0, 0, 0, l and l.ends - nowms or -2, 0}
