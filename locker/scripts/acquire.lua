-- acquire: take a free lock, re-enter an owned one, or join the queue.
-- ARGV: token, ttl_ms, wait_ms (0 = do not queue), mode ('a' acquire | 'r' recheck
-- by a queued waiter: report ownership without adding a hold), channel.
-- Reply: {status, fence, holds, pttl_ms, server_ms}; status 1 = obtained,
-- 2 = re-entered, 0 = busy (queued when wait_ms > 0).
local token, ttl, wait, mode, channel = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local t = redis.call('TIME')
local nowms = now_ms(t)
local owner = redis.call('HGET', KEYS[1], 'o')
if owner == token then
  if mode == 'r' then
    return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), 1, redis.call('PTTL', KEYS[1]), nowms}
  end
  local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
  if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
  return {2, tonumber(redis.call('HGET', KEYS[1], 'f')), n, redis.call('PTTL', KEYS[1]), nowms}
end
if not owner then
  local w = head(nowms)
  if w == nil or w == token then
    if w then
      redis.call('ZREM', KEYS[3], token)
      redis.call('HDEL', KEYS[4], token)
    end
    return {1, take(token, ttl, t), 1, ttl, nowms}
  end
  -- The holder's lease ran out with waiters queued: the head gets it now.
  grant(channel, t)
end
if wait > 0 then
  -- Scored by server microseconds: arrival order, first come first served.
  redis.call('ZADD', KEYS[3], 'NX', string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2])), token)
  redis.call('HSET', KEYS[4], token, string.format('%.0f', nowms + wait) .. ':' .. ttl)
  local keep = wait + 1000
  if redis.call('PTTL', KEYS[3]) < keep then
    redis.call('PEXPIRE', KEYS[3], keep)
    redis.call('PEXPIRE', KEYS[4], keep)
  end
end
return {0, 0, 0, redis.call('PTTL', KEYS[1]), nowms}
