-- keep: drop one hold; the last keeps the lock for keep_ms more instead of
-- freeing it (keep after the handler: a resubmit within the window finds
-- the lock busy). The owner token stays, but its holder is done: nobody
-- renews or releases it, and the lock ends by itself. ARGV: token, keep_ms.
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then).
local token, keepms = ARGV[1], tonumber(ARGV[2])
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local o, f, n, w, rest = parse(v)
if o ~= token then return -1 end
if n > 1 then
  redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. (n - 1) .. ' ' .. w .. rest, 'KEEPTTL')
  return n - 1
end
redis.call('SET', KEYS[1], o .. ' ' .. f .. ' 1 ' .. w .. rest, 'PX', keepms)
if w == '1' then
  -- Released as far as the queue is concerned: the grant record goes (or
  -- the lock's end would read as a lapsed grant), and waiters learn when
  -- the kept lock ends, so they re-check then.
  redis.call('HDEL', KEYS[3], '?')
  redis.call('PUBLISH', chan(), o .. ' ' .. f .. ' ' .. now_ms(redis.call('TIME')) .. ' ' .. keepms)
end
return 0
