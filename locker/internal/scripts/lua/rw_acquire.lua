-- rw_acquire: take a read or write hold, re-enter one, or join the queue.
-- ARGV as acquire.lua's (token, ttl_ms, wait_ms, mode 'a' | 'e' | 'r', sid,
-- window_ms), kind ('r' read | 'w' write) and optionally label (as
-- acquire.lua's). Reply as sem_acquire.lua's (the fence alone for an idle
-- lock taken with the whole ttl);
-- a busy reply's pttl is the lease left of the holder that ends first.
local token, ttl, wait, mode, sid, window, kind, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8]
local t = redis.call('TIME')
local nowms = now_ms(t)
-- The common case, a new token on an idle lock, was taken by
-- rw_acquire_idle.lua, which runs before this file.
sem_purge(nowms)
local held = sem_reenter(token, ttl, mode, nowms)
if held then return held end
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- Nobody queued: enter now if the kind allows, in this one call.
  if rw_free(kind) then
    return {1, rw_take(token, kind, ttl, nowms, label), 1, ttl, 0}
  end
  if wait <= 0 and mode ~= 'r' then
    return {0, 0, 0, sem_left(nowms), 0}
  end
end
-- Waiters queued (or the caller queues now): first come, first served.
if wait > 0 or mode == 'r' then
  -- The hash first: enqueue stretches it (see there).
  redis.call('HSET', KEYS[3], '~' .. token, kind, 'Q', '1') -- Q: see sem_release.lua
  enqueue(entry(token, ARGV[3], ARGV[2], sid, label), now_us(t), math.max(wait, 1), mode == 'a')
end
local mf, mpx = rw_grant(token, nowms, window)
if mf then
  return {1, mf, 1, mpx, nowms}
end
if wait <= 0 and mode ~= 'r' and redis.call('EXISTS', KEYS[2]) == 0 and rw_free(kind) then
  -- Nobody in the queue was alive: a caller that does not wait enters.
  return {1, rw_take(token, kind, ttl, nowms, label), 1, ttl, 0}
end
return {0, 0, 0, sem_left(nowms), nowms}
