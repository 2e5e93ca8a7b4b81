-- rw_acquire: take a read or write hold, re-enter one, or join the queue.
-- Arguments as acquire.lua's (a_token, a_ttl_ms, a_wait_ms, a_mode 'a' |
-- 'e' | 'r', a_sid, a_window_ms), a_kind ('r' read | 'w' write) and
-- optionally a_label (as acquire.lua's). Reply as sem_acquire.lua's (the
-- fence alone for an idle lock taken with the whole ttl); a busy reply's
-- pttl is the lease left of the holder that ends first.
local ttl, wait, window = tonumber(a_ttl_ms), tonumber(a_wait_ms), tonumber(a_window_ms)
local t = redis.call('TIME')
local nowms = now_ms(t)
-- The common case, a new token on an idle lock, was taken by
-- rw_acquire_idle.lua, which runs before this file.
sem_purge(nowms)
local held = sem_reenter(a_token, ttl, a_mode, nowms)
if held then return held end
if redis.call('EXISTS', k_queue) == 0 then
  -- Nobody queued: enter now if the kind allows, in this one call.
  if rw_free(a_kind) then
    return {1, rw_take(a_token, a_kind, ttl, nowms, a_label), 1, ttl, 0}
  end
  if wait <= 0 and a_mode ~= 'r' then
    return {0, 0, 0, sem_left(nowms), 0}
  end
end
-- Waiters queued (or the caller queues now): first come, first served.
if wait > 0 or a_mode == 'r' then
  -- The hash first: enqueue stretches it (see there).
  redis.call('HSET', k_records, '~' .. a_token, a_kind, 'Q', '1') -- Q: see sem_release.lua
  enqueue(entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label), now_us(t), math.max(wait, 1), a_mode == 'a')
end
local mf, mpx = rw_grant(a_token, nowms, window)
if mf then
  return {1, mf, 1, mpx, nowms}
end
if wait <= 0 and a_mode ~= 'r' and redis.call('EXISTS', k_queue) == 0 and rw_free(a_kind) then
  -- Nobody in the queue was alive: a caller that does not wait enters.
  return {1, rw_take(a_token, a_kind, ttl, nowms, a_label), 1, ttl, 0}
end
return {0, 0, 0, sem_left(nowms), nowms}
