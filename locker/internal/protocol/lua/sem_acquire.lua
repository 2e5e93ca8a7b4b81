-- sem_acquire: take a permit, re-enter a held one, or join the queue.
-- Arguments as acquire.lua's (a_token, a_ttl_ms, a_wait_ms, a_mode 'a' |
-- 'e' | 'r', a_sid, a_window_ms), a_limit and optionally a_label (as
-- acquire.lua's; a waiter passes the same ttl, wait, sid and label on
-- every call: its queue entry). Reply as acquire.lua's: the fence alone
-- for a free permit taken with the whole ttl, else {status, fence, holds,
-- pttl_ms, server_ms}; a busy reply's pttl is the lease left of the
-- permit that ends first.
local ttl, wait, window, limit = tonumber(a_ttl_ms), tonumber(a_wait_ms), tonumber(a_window_ms), tonumber(a_limit)
local t = redis.call('TIME')
local nowms = now_ms(t)
-- The common case, a new token on an idle semaphore, was taken by
-- sem_acquire_idle.lua, which runs before this file.
sem_purge(nowms)
local held = sem_reenter(a_token, ttl, a_mode, nowms)
if held then return held end
if redis.call('EXISTS', k_queue) == 0 then
  -- Nobody queued: a free permit is the caller's, in this one call.
  if redis.call('ZCARD', k_holders) < limit then
    return sem_take(a_token, ttl, nowms, a_label, limit)
  end
  if wait <= 0 and a_mode ~= 'r' then
    return {0, 0, 0, sem_left(nowms), 0}
  end
end
-- Waiters queued (or the caller queues now): first come, first served.
if wait > 0 or a_mode == 'r' then
  -- The hash first: enqueue stretches it (see there).
  redis.call('HSET', k_records, '#', limit, 'Q', '1') -- Q: see sem_release.lua
  enqueue(entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label), now_us(t), math.max(wait, 1), a_mode == 'a')
end
local mf, mpx = sem_grant(a_token, nowms, window, limit)
if mf then
  return {1, mf, 1, mpx, nowms}
end
if wait <= 0 and a_mode ~= 'r' and redis.call('ZCARD', k_holders) < limit then
  -- Nobody in the queue was alive: a caller that does not wait takes it.
  return {1, sem_take(a_token, ttl, nowms, a_label, limit), 1, ttl, 0}
end
return {0, 0, 0, sem_left(nowms), nowms}
