-- The lock's value and its fencing token: first in every script of the
-- lock kinds, before common.lua, so that the uncontended paths of acquire
-- and release (acquire_free.lua, release.lua) can finish before the rest
-- of the helpers are defined — each definition makes a closure on every
-- call of the script, which cost the free lock's acquire and release
-- about a quarter of their time in Redis (docs/benchmarks.md, issue 19).
-- KEYS[1] lock: string "owner fence holds waiting granted[ label]" with the
--         lease as expiry; waiting is 1 when the lock came from the queue or
--         waiters joined while it was held (its release then goes through
--         free); granted is when the owner got it (server ms), label the
--         owner's description (Params.Label), only when it has one. What
--         follows waiting is kept as it is by every rewrite of the value.
-- KEYS[2] fencing counter (expires FENCE_TTL after it was seeded)
local FENCE_TTL = 3600000

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- parse reads the lock value; rest is what follows waiting (" granted[
-- label]", or "" for a value written before grant times were kept).
local function parse(v)
  local o, f, n, w, rest = string.match(v, '^(%S+) (%d+) (%d+) (%d)(.*)$')
  return o, f, tonumber(n), w, rest
end

local function fmt(x) return string.format('%.0f', x) end

-- mint returns a fencing token larger than every earlier one for this key.
-- A missing counter (first use, expired, or a restart without persistence)
-- is seeded from the server clock in microseconds, which is larger than any
-- token minted before as long as fewer than a million are minted a second.
local function mint()
  local f = redis.call('INCR', KEYS[2])
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', KEYS[2], fmt(f), 'PX', FENCE_TTL)
  end
  return f
end

-- take makes owner the holder for ttl ms, granted at nowms (nil: now),
-- with label (nil or '': none).
local function take(owner, ttl, waiting, nowms, label)
  local f = mint()
  nowms = nowms or now_ms(redis.call('TIME'))
  local v = owner .. ' ' .. fmt(f) .. ' 1 ' .. waiting .. ' ' .. fmt(nowms)
  if label and label ~= '' then v = v .. ' ' .. label end
  redis.call('SET', KEYS[1], v, 'PX', ttl)
  return f
end

