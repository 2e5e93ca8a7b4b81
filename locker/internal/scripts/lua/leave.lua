-- leave: a queued waiter gives up. If the lock was handed to it meanwhile,
-- mode 'k' keeps it (reply as acquire's) and mode 'r' releases it to the next
-- waiter. ARGV: token, mode, handoff ('g' | 'n', see free),
-- window_ms. Reply: {status, fence, holds, pttl_ms, 0}.
local token, mode, handoff, window = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local v = redis.call('GET', KEYS[1])
if v then
  local o, f, n, w = parse(v)
  if o == token then
    if mode == 'k' then
      return {1, tonumber(f), n, redis.call('PTTL', KEYS[1]), 0}
    end
    if handoff ~= 'g' then redis.call('DEL', KEYS[1]) end
    free(chan(), handoff, window, tonumber(f))
    return {0, 0, 0, -2, 0}
  end
end
redis.call('ZREM', KEYS[2], token)
redis.call('HDEL', KEYS[3], token)
return {0, 0, 0, redis.call('PTTL', KEYS[1]), 0}
