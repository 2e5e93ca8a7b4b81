-- sem_acquire_idle: sem_acquire.lua's common case, a new token ('a') on an
-- idle semaphore (nobody holds, nobody queues), run first in the script,
-- ahead of the shared functions: a call that returns here does not pay for
-- defining them (common.lua's and sem_common.lua's closures are a large
-- part of a short call, docs/benchmarks.md). It does what
-- sem_take and mint (sem_common.lua, fence.lua) do, written out, and sets
-- both keys' expiry outright: on an idle lock nothing in the details hash
-- is of use (its entries belong to holders and queued waiters). The token
-- is the server clock in microseconds: an idle semaphore has no earlier
-- token at hand (mint in fence.lua). Arguments and reply as
-- sem_acquire.lua's (the fence alone).
if a_mode == 'a' and redis.call('EXISTS', k_holders, k_queue) == 0 then
  local ttl = tonumber(a_ttl_ms)
  local t = redis.call('TIME')
  -- Server µs and ms as text, from TIME's seconds and zero-padded
  -- microseconds; numbers go out through '%d': Lua's own number to text
  -- conversion (and '%.0f') runs the C library's float printing, which
  -- with the text to number conversions made most of what a semaphore
  -- pair cost Redis more than a mutex's.
  local us = string.sub('00000' .. t[2], -6)
  local f = t[1] .. us
  local ms = t[1] .. string.sub(us, 1, 3)
  local h = f .. ' 1 ' .. ms
  if a_label and a_label ~= '' then h = h .. ' ' .. a_label end
  redis.call('ZADD', k_holders, string.format('%d', tonumber(ms) + ttl), a_token)
  redis.call('HSET', k_records, '=' .. a_token, h, '#', a_limit, 'F', f)
  local life = string.format('%d', ttl + 1000)
  redis.call('PEXPIRE', k_holders, life)
  redis.call('PEXPIRE', k_records, life)
  return tonumber(f)
end
