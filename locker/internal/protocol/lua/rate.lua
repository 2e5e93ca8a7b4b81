-- rate: one rate-limit decision by GCRA (the generic cell rate algorithm)
-- on one key, at the server's clock. One key, one GET and at most one SET.
-- k_rate: the rate key, prefix{name}:rate.
-- a_interval_us: interval, the share of one request (period / N) in
-- microseconds, a decimal; a_burst: the requests admitted at once;
-- a_max_delay_us: max delay in microseconds: 0 refuses a request that
-- does not conform now, above 0 admits one whose slot comes within it (a
-- reservation: the caller waits for its slot).
--
-- The key holds "last debt interval burst": the server time of the last
-- admission (microseconds), the bucket's debt then (microseconds: how far
-- the theoretical arrival time was ahead of it), and the terms of that
-- admission (for Inspect). The debt decays with time, one for one; an
-- admission adds one interval; a request conforms when the debt it would
-- leave is at most burst * interval. The key expires when the debt is
-- back to zero: a full bucket leaves nothing behind. A refusal writes
-- nothing.
--
-- Reply: {admitted (0 or 1), remaining, wait, reset}, times in
-- microseconds rounded up. remaining: requests that would be admitted
-- right after this one. wait: a refusal's time until one more would
-- conform; an admission's time until its reserved slot (0: now). reset:
-- until the bucket is full again.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv = tonumber(a_interval_us)
local cap = tonumber(a_burst) * iv
local maxdelay = tonumber(a_max_delay_us)
local debt = 0
local v = redis.call('GET', k_rate)
if v then
  local last, d = string.match(v, '^(%d%S*) (%S+)')
  if not last then
    -- A record of another protocol ('@' first), or one no protocol
    -- wrote: refused, nothing written (see refuse in fence.lua).
    error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(v, '^@(%d+)') or 'unknown') .. ' 1'})
  end
  -- A server clock that went back does not add debt.
  debt = math.max(tonumber(d) - math.max(now - tonumber(last), 0), 0)
end
local after = debt + iv
local delay = after - cap
-- Sums of intervals are not exact in binary: a hundredth of a
-- microsecond over is rounding, not a request too many.
if delay > maxdelay + 0.01 then
  return {0, 0, math.ceil(delay), math.ceil(debt)}
end
redis.call('SET', k_rate, string.format('%.0f %.17g %s %s', now, after, a_interval_us, a_burst), 'PX', math.ceil(after / 1000))
if delay > 0.01 then
  return {1, 0, math.ceil(delay), math.ceil(after)}
end
return {1, math.max(math.floor((cap - after) / iv + 1e-6), 0), 0, math.ceil(after)}
