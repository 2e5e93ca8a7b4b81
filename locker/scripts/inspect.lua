-- inspect: a read-only view of one lock, for operators. Writes nothing.
-- KEYS as acquire's: lock, fencing counter, waiter queue, waiter details.
-- ARGV: max waiters to return.
-- Reply: {lock value or '', pttl_ms (-2: no lock), server seconds, server
-- microseconds, queue length, then per waiter in queue order: token,
-- arrival (server microseconds, as ZRANGE gives it), details or ''}.
local v = redis.call('GET', KEYS[1]) or ''
local pttl = -2
if v ~= '' then pttl = redis.call('PTTL', KEYS[1]) end
local t = redis.call('TIME')
local out = {v, pttl, t[1], t[2], redis.call('ZCARD', KEYS[3])}
local q = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
for i = 1, #q, 2 do
  out[#out + 1] = q[i]
  out[#out + 1] = q[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[4], q[i]) or ''
end
return out
