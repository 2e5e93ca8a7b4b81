-- sem_acquire: take a permit, re-enter a held one, or join the queue.
-- ARGV as acquire.lua's (token, ttl_ms, wait_ms, mode 'a' | 'e' | 'r', sid,
-- window_ms), limit and optionally label (as acquire.lua's; a waiter
-- passes the same ttl, wait, sid and label on every call: its queue
-- entry). Reply as acquire.lua's: the fence alone for a free
-- permit taken with the whole ttl, else {status, fence, holds, pttl_ms,
-- server_ms}; a busy reply's pttl is the lease left of the permit that ends
-- first.
local token, ttl, wait, mode, sid, window, limit, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local t = redis.call('TIME')
local nowms = now_ms(t)
-- The common case, a new token on an idle semaphore, was taken by
-- sem_acquire_idle.lua, which runs before this file.
sem_purge(nowms)
local held = sem_reenter(token, ttl, mode, nowms)
if held then return held end
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- Nobody queued: a free permit is the caller's, in this one call.
  if redis.call('ZCARD', KEYS[1]) < limit then
    return sem_take(token, ttl, nowms, label, limit)
  end
  if wait <= 0 and mode ~= 'r' then
    return {0, 0, 0, sem_left(nowms), 0}
  end
end
-- Waiters queued (or the caller queues now): first come, first served.
if wait > 0 or mode == 'r' then
  -- The hash first: enqueue stretches it (see there).
  redis.call('HSET', KEYS[3], '#', limit, 'Q', '1') -- Q: see sem_release.lua
  enqueue(entry(token, ARGV[3], ARGV[2], sid, label), now_us(t), math.max(wait, 1), mode == 'a')
end
local mf, mpx = sem_grant(token, nowms, window, limit)
if mf then
  return {1, mf, 1, mpx, nowms}
end
if wait <= 0 and mode ~= 'r' and redis.call('ZCARD', KEYS[1]) < limit then
  -- Nobody in the queue was alive: a caller that does not wait takes it.
  return {1, sem_take(token, ttl, nowms, label, limit), 1, ttl, 0}
end
return {0, 0, 0, sem_left(nowms), nowms}
