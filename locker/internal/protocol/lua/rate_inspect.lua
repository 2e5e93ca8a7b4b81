-- rate_inspect: a read-only view of one rate key, for operators.
-- k_rate: the rate key (see rate.lua). Reply: nil when the key does not
-- exist (the bucket is full, or was never used); else {remaining, reset
-- (microseconds, rounded up), interval (microseconds, as stored), burst},
-- at the server's clock, under the terms of the last admission.
local v = redis.call('GET', k_rate)
if not v then
  return nil
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last, d, iv, burst = string.match(v, '^(%d%S*) (%S+) (%S+) (%S+)$')
if not last then
  -- Another protocol's record, or none's (see rate.lua).
  error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(v, '^@(%d+)') or 'unknown') .. ' 1'})
end
local debt = math.max(tonumber(d) - math.max(now - tonumber(last), 0), 0)
local rem = math.floor((tonumber(burst) * tonumber(iv) - debt) / tonumber(iv) + 1e-6)
return {math.max(rem, 0), math.ceil(debt), iv, tonumber(burst)}
