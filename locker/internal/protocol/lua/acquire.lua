-- acquire: take a free lock, re-enter an owned one, or join the queue.
-- Arguments: a_token, a_ttl_ms, a_wait_ms (0 = do not queue; a waiter
-- passes its first try's on every call, since it is part of its queue
-- entry: see entry in common.lua), a_mode ('a' acquire with a new token:
-- if that token already owns the lock, the call is a client's retry of
-- one that ran, and reports the lock obtained without another hold | 'e'
-- re-enter with the token of a held lock: add a hold | 'r' re-check by a
-- queued waiter: report ownership without adding a hold, and hand a free
-- lock to the head of the queue | 'n' Redlock's waiters: never handed the
-- lock, but registered in the queue so that releases publish a free
-- notice while they wait), a_sid (the caller's subscriber), a_window_ms
-- (see grant in mutex.lua), and optionally a_label (the holder's
-- description; absent: none).
-- Reply: {status, fence, holds, pttl_ms, server_ms}; status 1 = obtained,
-- 2 = re-entered, 0 = busy (queued when waiting). server_ms is set when queued.
-- The common case, a free lock taken with a new token and the whole ttl,
-- replies with the fence alone (an integer): {1, fence, 1, ttl, 0}; it is
-- answered by acquire_free.lua, before the shared functions, which hands
-- on clock and found when it ran (mode 'a').
local ttl, wait, window = tonumber(a_ttl_ms), tonumber(a_wait_ms), tonumber(a_window_ms)
local nowus = now_us(clock or redis.call('TIME'))
local nowms = math.floor(nowus / 1000)
local v = found or redis.call('GET', k_lock)
local l = v and parse(v)
if l and held(l, nowms) then
  if l.owner == a_token then
    if a_mode ~= 'e' then
      return {1, l.fence, l.holds, l.ends - nowms, 0}
    end
    -- A nested hold never shortens the lease; it may lengthen it.
    l.holds = l.holds + 1
    l.ends = math.max(l.ends, nowms + ttl)
    put(l)
    return {2, l.fence, l.holds, l.ends - nowms, 0}
  end
  if wait <= 0 and a_mode ~= 'r' then
    return {0, 0, 0, l.ends - nowms, 0}
  end
  local life = join(l.queue, entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label), nowus, math.max(wait, 1), a_mode == 'a')
  if life ~= l.queue then
    l.queue = life
    put(l)
  end
  return {0, 0, 0, l.ends - nowms, nowms}
end
if a_mode == 'e' then
  -- The held lock is gone (lost): re-entry must not take it afresh.
  return {0, 0, 0, -2, 0}
end
-- Free: no key, or a lease that is over, kept for the queue (l).
local prev = math.max(last() or 0, l and l.fence or 0)
if a_mode == 'n' then
  -- Redlock: leave the queue and keep releases notifying the rest.
  redis.call('ZREM', k_queue, entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label))
  local life = 0
  if l and redis.call('EXISTS', k_queue) == 1 then life = l.queue end
  return {1, take(a_token, ttl, life, nowus, a_label, prev, NOT_QUEUED), 1, ttl, 0}
end
-- First come, first served: a caller queues behind the waiters, and the
-- head of the queue gets the lock (a queued waiter re-checks, a grant
-- lapsed, a holder's lease ran out).
local channel = chan()
local life = 0
if l and redis.call('EXISTS', k_queue) == 1 then
  life = l.queue
  lapse(l, channel, nowus)
end
if wait > 0 or a_mode == 'r' then
  life = join(life, entry(a_token, a_wait_ms, a_ttl_ms, a_sid, a_label), nowus, math.max(wait, 1), a_mode == 'a')
end
local w, f, px = grant(channel, a_token, nowus, window, prev, life)
if w == a_token then
  return {1, f, 1, px, nowms}
end
if not w then
  -- Nobody in the queue was alive: a caller that does not wait takes it.
  return {1, take(a_token, ttl, 0, nowus, a_label, prev, NOT_QUEUED), 1, ttl, 0}
end
return {0, 0, 0, px, nowms}
