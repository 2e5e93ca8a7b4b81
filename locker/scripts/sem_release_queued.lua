-- sem_release_queued: the end of sem_release.lua, after the shared
-- functions, when waiters may be queued ("Q" set): free permits go to the
-- queue's head (sem_drop in sem_common.lua), or "Q" goes when the queue is
-- gone.
if redis.call('EXISTS', KEYS[3]) == 1 then
  sem_purge(nowms)
  hand_on(nowms, window)
else
  redis.call('HDEL', KEYS[4], 'Q')
end
return 0
