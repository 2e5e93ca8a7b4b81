-- keep: drop one hold; the last keeps the lock for keep_ms more instead of
-- freeing it (keep after the handler: a resubmit within the window finds
-- the lock busy). The owner token stays, but its holder is done: nobody
-- renews or releases it, and the lock ends by itself. Arguments: a_token,
-- a_keep_ms.
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then).
local keepms = tonumber(a_keep_ms)
local v = redis.call('GET', k_lock)
if not v then return -1 end
local l = parse(v)
if l.owner ~= a_token then return -1 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return -1 end
if l.holds > 1 then
  l.holds = l.holds - 1
  put(l)
  return l.holds
end
l.ends = nowms + keepms
if l.queue ~= 0 then
  -- Released as far as the queue is concerned: not a grant any more (or
  -- the lock's end would read as a lapsed grant), and waiters learn when
  -- the kept lock ends, so they re-check then.
  l.from = NOT_QUEUED
  put(l)
  redis.call('PUBLISH', chan(), l.owner .. ' ' .. fmt(l.fence) .. ' ' .. nowms .. ' ' .. keepms)
  return 0
end
put(l)
return 0
