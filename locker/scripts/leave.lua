-- leave: a queued waiter gives up. If the lock was handed to it meanwhile,
-- mode 'k' keeps it (reply as acquire's) and mode 'r' releases it to the next
-- waiter. ARGV: token, mode, channel. Reply: {status, fence, holds, pttl_ms, server_ms}.
local token, mode, channel = ARGV[1], ARGV[2], ARGV[3]
local t = redis.call('TIME')
if redis.call('HGET', KEYS[1], 'o') == token then
  if mode == 'k' then
    return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), 1, redis.call('PTTL', KEYS[1]), now_ms(t)}
  end
  redis.call('DEL', KEYS[1])
  grant(channel, t)
  return {0, 0, 0, -2, now_ms(t)}
end
redis.call('ZREM', KEYS[3], token)
redis.call('HDEL', KEYS[4], token)
return {0, 0, 0, redis.call('PTTL', KEYS[1]), now_ms(t)}
