-- acquire: take a free lock, re-enter an owned one, or join the queue.
-- ARGV: token, ttl_ms, wait_ms (0 = do not queue; a waiter passes its
-- first try's on every call, since it is part of its queue entry: see
-- entry in common.lua), mode ('a' acquire with a
-- new token: if that token already owns the lock, the call is a client's
-- retry of one that ran, and reports the lock obtained without another hold |
-- 'e' re-enter with the token of a held lock: add a hold | 'r'
-- re-check by a queued waiter: report ownership without adding a hold, and
-- hand a free lock to the head of the queue | 'n' Redlock's waiters: never
-- handed the lock, but registered in the queue so that releases publish a
-- free notice while they wait), sid (the caller's subscriber),
-- window_ms (see grant in mutex.lua), and optionally label (the holder's
-- description; absent: none).
-- Reply: {status, fence, holds, pttl_ms, server_ms}; status 1 = obtained,
-- 2 = re-entered, 0 = busy (queued when waiting). server_ms is set when queued.
-- The common case, a free lock taken with a new token and the whole ttl,
-- replies with the fence alone (an integer): {1, fence, 1, ttl, 0}; it is
-- answered by acquire_free.lua, before value.lua, which hands on clock and
-- found when it ran (mode 'a').
local token, ttl, wait, mode, sid, window, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
local nowus = now_us(clock or redis.call('TIME'))
local nowms = math.floor(nowus / 1000)
local v = found or redis.call('GET', KEYS[1])
local l = v and parse(v)
if l and held(l, nowms) then
  if l.owner == token then
    if mode ~= 'e' then
      return {1, l.fence, l.holds, l.ends - nowms, 0}
    end
    -- A nested hold never shortens the lease; it may lengthen it.
    l.holds = l.holds + 1
    l.ends = math.max(l.ends, nowms + ttl)
    put(l)
    return {2, l.fence, l.holds, l.ends - nowms, 0}
  end
  if wait <= 0 and mode ~= 'r' then
    return {0, 0, 0, l.ends - nowms, 0}
  end
  local life = join(l.queue, entry(token, ARGV[3], ARGV[2], sid, label), nowus, math.max(wait, 1), mode == 'a')
  if life ~= l.queue then
    l.queue = life
    put(l)
  end
  return {0, 0, 0, l.ends - nowms, nowms}
end
if mode == 'e' then
  -- The held lock is gone (lost): re-entry must not take it afresh.
  return {0, 0, 0, -2, 0}
end
-- Free: no key, or a lease that is over, kept for the queue (l).
local prev = math.max(last() or 0, l and l.fence or 0)
if mode == 'n' then
  -- Redlock: leave the queue and keep releases notifying the rest.
  redis.call('ZREM', KEYS[2], entry(token, ARGV[3], ARGV[2], sid, label))
  local life = 0
  if l and redis.call('EXISTS', KEYS[2]) == 1 then life = l.queue end
  return {1, take(token, ttl, life, nowus, label, prev, NOT_QUEUED), 1, ttl, 0}
end
-- First come, first served: a caller queues behind the waiters, and the
-- head of the queue gets the lock (a queued waiter re-checks, a grant
-- lapsed, a holder's lease ran out).
local channel = chan()
local life = 0
if l and redis.call('EXISTS', KEYS[2]) == 1 then
  life = l.queue
  lapse(l, channel, nowus)
end
if wait > 0 or mode == 'r' then
  life = join(life, entry(token, ARGV[3], ARGV[2], sid, label), nowus, math.max(wait, 1), mode == 'a')
end
local w, f, px = grant(channel, token, nowus, window, prev, life)
if w == token then
  return {1, f, 1, px, nowms}
end
if not w then
  -- Nobody in the queue was alive: a caller that does not wait takes it.
  return {1, take(token, ttl, 0, nowus, label, prev, NOT_QUEUED), 1, ttl, 0}
end
return {0, 0, 0, px, nowms}
