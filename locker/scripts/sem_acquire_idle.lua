-- sem_acquire_idle: sem_acquire.lua's common case, a new token ('a') on an
-- idle semaphore (nobody holds, nobody queues), run first in the script,
-- ahead of the shared functions: a call that returns here does not pay for
-- defining them (common.lua's and sem_common.lua's ~30 closures cost
-- 2.3 µs of a ~5 µs call, measured with INFO commandstats). It does what
-- sem_take and mint (sem_common.lua, common.lua) do, written out, and sets
-- both keys' expiry outright: on an idle lock nothing in the details hash
-- is of use (its entries belong to holders and queued waiters). ARGV and
-- reply as sem_acquire.lua's (the fence alone).
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  local token, ttl, limit, label = ARGV[1], tonumber(ARGV[2]), ARGV[7], ARGV[8]
  local t = redis.call('TIME')
  local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    -- mint's seed (common.lua): the server clock in microseconds.
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', 3600000)
  end
  local h = string.format('%.0f 1 %.0f', f, nowms)
  if label and label ~= '' then h = h .. ' ' .. label end
  redis.call('ZADD', KEYS[1], string.format('%.0f', nowms + ttl), token)
  redis.call('HSET', KEYS[4], '=' .. token, h, '#', limit)
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
  redis.call('PEXPIRE', KEYS[4], ttl + 1000)
  return f
end
