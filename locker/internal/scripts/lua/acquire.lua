-- acquire: take a free lock, re-enter an owned one, or join the queue.
-- ARGV: token, ttl_ms, wait_ms (0 = do not queue), mode ('a' acquire with a
-- new token: if that token already owns the lock, the call is a client's
-- retry of one that ran, and reports the lock obtained without another hold |
-- 'e' re-enter with the token of a held lock: add a hold | 'r'
-- re-check by a queued waiter: report ownership without adding a hold, and
-- hand a free lock to the head of the queue | 'n' Redlock's waiters: never
-- handed the lock, but registered in the queue so that releases publish a
-- free notice while they wait), sid (the caller's subscriber),
-- window_ms (see grant in common.lua), and optionally label (the holder's
-- description; absent: none).
-- Reply: {status, fence, holds, pttl_ms, server_ms}; status 1 = obtained,
-- 2 = re-entered, 0 = busy (queued when waiting). server_ms is set when queued.
-- The common case, a free lock taken with a new token and the whole ttl,
-- replies with the fence alone (an integer): {1, fence, 1, ttl, 0}; it is
-- answered by acquire_free.lua, before common.lua.
local token, ttl, wait, mode, sid, window, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
local v = redis.call('GET', KEYS[1])
if v then
  local o, f, n, w, rest = parse(v)
  if o == token then
    if mode ~= 'e' then
      return {1, tonumber(f), n, redis.call('PTTL', KEYS[1]), 0}
    end
    n = n + 1
    redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. n .. ' ' .. w .. rest, 'KEEPTTL')
    local pttl = redis.call('PTTL', KEYS[1])
    if pttl < ttl then
      redis.call('PEXPIRE', KEYS[1], ttl)
      pttl = ttl
    end
    return {2, tonumber(f), n, pttl, 0}
  end
  if wait <= 0 and mode ~= 'r' then
    return {0, 0, 0, redis.call('PTTL', KEYS[1]), 0}
  end
  local nowms = enqueue(token, now_us(redis.call('TIME')), math.max(wait, 1), ttl, sid, mode == 'a', label, true)
  if w ~= '1' then
    redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. n .. ' 1' .. rest, 'KEEPTTL')
    -- This holder did not come from the queue: a grant recorded earlier
    -- ended without a release, and a holder came after it (see lapse).
    redis.call('HDEL', KEYS[3], '?')
  end
  return {0, 0, 0, redis.call('PTTL', KEYS[1]), nowms}
end
if mode == 'e' then
  -- The held lock is gone (lost): re-entry must not take it afresh.
  return {0, 0, 0, -2, 0}
end
if mode == 'n' then
  -- Redlock: free here; leave the queue and keep releases notifying the rest.
  redis.call('ZREM', KEYS[2], token)
  redis.call('HDEL', KEYS[3], token)
  local waiting = '0'
  if redis.call('EXISTS', KEYS[2]) == 1 then waiting = '1' end
  return {1, take(token, ttl, waiting, now_us(redis.call('TIME')), label, last()), 1, ttl, 0}
end
-- Here a new token ('a') found waiters queued (see the first check).
-- Free while waiters are queued (a grant lapsed, a holder's lease ran out,
-- or a queued waiter re-checks): first come, first served, so a new caller
-- queues behind them and the head of the queue gets the lock.
local nowus = now_us(redis.call('TIME'))
local channel = chan()
local prev = math.max(last() or 0, lapse(channel, nowus) or 0)
local nowms = math.floor(nowus / 1000)
if wait > 0 or mode == 'r' then
  enqueue(token, nowus, math.max(wait, 1), ttl, sid, mode == 'a', label, true)
end
local w, f, px = grant(channel, token, nowus, window, prev)
if w == token then
  return {1, f, 1, px, nowms}
end
if not w then
  -- Nobody in the queue was alive: a caller that does not wait takes it.
  return {1, take(token, ttl, '0', nowus, label, prev), 1, ttl, 0}
end
return {0, 0, 0, px, nowms}
