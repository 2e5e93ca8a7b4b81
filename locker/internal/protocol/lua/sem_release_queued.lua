-- sem_release_queued: the end of sem_release.lua, after the shared
-- functions, when waiters may be queued ("Q" set): free permits go to the
-- queue's head (sem_drop in sem_common.lua), or "Q" goes when the queue is
-- gone.
if redis.call('EXISTS', k_queue) == 1 then
  local now = tonumber(nowms)
  sem_purge(now)
  -- Grants to waiters of the caller's Locker (a_sid) come back in the
  -- reply, {0, token, fence, server_ms, pttl_ms, ...}, not on the channel.
  local told = {0}
  hand_on(now, tonumber(a_window_ms), a_sid, told)
  if #told > 1 then return told end
else
  redis.call('HDEL', k_records, 'Q')
end
return 0
