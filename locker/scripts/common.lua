-- Shared by every script that can hand a lock over.
-- KEYS[1] lock hash {o = owner token, n = hold count, f = fencing token}
-- KEYS[2] fence counter (string, expires FENCE_TTL after the last mint)
-- KEYS[3] waiter queue (zset: owner token -> arrival, server microseconds)
-- KEYS[4] waiter info (hash: owner token -> "deadline_ms:ttl_ms")
local FENCE_TTL = 3600000

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- mint returns a fencing token larger than every earlier one for this key:
-- the counter plus one, but never less than the server clock in microseconds,
-- so a restart without persistence (counter gone) still moves forward.
local function mint(t)
  local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local v = prev + 1
  if v < us then v = us end
  redis.call('SET', KEYS[2], string.format('%.0f', v), 'PX', FENCE_TTL)
  return v
end

-- take makes owner the holder of the free lock with a fresh fencing token.
local function take(owner, ttl, t)
  local f = mint(t)
  redis.call('HSET', KEYS[1], 'o', owner, 'n', 1, 'f', string.format('%.0f', f))
  redis.call('PEXPIRE', KEYS[1], ttl)
  return f
end

-- head drops waiters whose wait is over and returns the first live one
-- (token, ttl) or nil. The queue and info hash vanish when they empty.
local function head(nowms)
  while true do
    local h = redis.call('ZRANGE', KEYS[3], 0, 0)
    if #h == 0 then return nil end
    local info = redis.call('HGET', KEYS[4], h[1])
    if info then
      local dl, ttl = string.match(info, '^(%d+):(%d+)$')
      if tonumber(dl) >= nowms then return h[1], tonumber(ttl) end
    end
    redis.call('ZREM', KEYS[3], h[1])
    redis.call('HDEL', KEYS[4], h[1])
  end
end

-- grant hands the free lock to the first live waiter, if any, and tells it
-- on the channel: "token fence grant_ms". Returns true when it granted.
local function grant(channel, t)
  if redis.call('ZCARD', KEYS[3]) == 0 then return false end
  local nowms = now_ms(t)
  local w, ttl = head(nowms)
  if not w then return false end
  redis.call('ZREM', KEYS[3], w)
  redis.call('HDEL', KEYS[4], w)
  local f = take(w, ttl, t)
  redis.call('PUBLISH', channel, w .. ' ' .. string.format('%.0f', f) .. ' ' .. nowms)
  return true
end
