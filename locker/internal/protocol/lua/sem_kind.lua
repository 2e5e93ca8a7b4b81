-- A semaphore hands free permits to the queue's head, up to the limit the
-- last waiter queued with.
local function hand_on(nowms, window, near, told)
  sem_grant(nil, nowms, window, tonumber(redis.call('HGET', k_records, '#') or '0'), near, told)
end
