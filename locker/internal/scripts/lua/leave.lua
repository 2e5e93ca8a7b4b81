-- leave: a queued waiter gives up. If the lock was handed to it meanwhile,
-- mode 'k' keeps it (reply as acquire's) and mode 'r' releases it to the next
-- waiter. ARGV: token, mode, handoff ('g' | 'n', see free in mutex.lua),
-- window_ms, then the waiter's ttl_ms, wait_ms, sid and optionally label
-- as its acquire calls passed them (its queue entry: entry in
-- common.lua). Reply: {status, fence, holds, pttl_ms, 0}; pttl_ms is the
-- holder's lease left, -2 when nobody holds.
local token, mode, handoff, window = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local nowus = now_us(redis.call('TIME'))
local nowms = math.floor(nowus / 1000)
local v = redis.call('GET', KEYS[1])
local l = v and parse(v)
if l and not held(l, nowms) then l = nil end
if l and l.owner == token then
  if mode == 'k' then
    return {1, l.fence, l.holds, l.ends - nowms, 0}
  end
  redis.call('DEL', KEYS[1])
  if l.queue ~= 0 then free(l, handoff, window, nowus) end
  return {0, 0, 0, -2, 0}
end
if ARGV[7] then -- a caller that never queued may pass no entry
  redis.call('ZREM', KEYS[2], entry(token, ARGV[6], ARGV[5], ARGV[7], ARGV[8]))
end
return {0, 0, 0, l and l.ends - nowms or -2, 0}
