-- sem_release: drop one hold of a permit; the last frees it and hands free
-- permits to the queue's head. ARGV: token, handoff (unused: one node only),
-- window_ms. Reply: holds left (>= 0), or -1 when the caller holds no
-- permit (its lease ended; nothing is touched).
local token, window = ARGV[1], tonumber(ARGV[3])
local nowms = now_ms(redis.call('TIME'))
local f, n, _, rest = sem_held(token, nowms)
if not f then return -1 end
if n > 1 then
  redis.call('HSET', KEYS[4], '=' .. token, f .. ' ' .. (n - 1) .. rest)
  return n - 1
end
sem_drop(token, nowms, window, hand_on)
return 0
