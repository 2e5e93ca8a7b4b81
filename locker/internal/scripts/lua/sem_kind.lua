-- A semaphore hands free permits to the queue's head, up to the limit the
-- last waiter queued with.
local function hand_on(nowms, window, near, told)
  sem_grant(nil, nowms, window, tonumber(redis.call('HGET', KEYS[3], '#') or '0'), near, told)
end
