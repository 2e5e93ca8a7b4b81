-- Shared by the scripts that take or hand over a lock.
-- KEYS[1] lock: string "owner fence holds waiting" with the lease as expiry;
--         waiting is 1 when the queue may hold waiters (release then hands over).
-- KEYS[2] fencing counter (expires FENCE_TTL after it was seeded)
-- KEYS[3] waiter queue (zset: owner token -> arrival, server microseconds)
-- KEYS[4] waiter info (hash: owner token -> "deadline_ms:ttl_ms")
-- Each redis.call costs about as much as a small command round trip inside
-- the server, so the uncontended paths make as few as they can.
local FENCE_TTL = 3600000

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function parse(v)
  local o, f, n, w = string.match(v, '^(%S+) (%d+) (%d+) (%d)$')
  return o, f, tonumber(n), w
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

local function take(owner, ttl, waiting)
  local f = mint()
  redis.call('SET', KEYS[1], owner .. ' ' .. fmt(f) .. ' 1 ' .. waiting, 'PX', ttl)
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

-- grant hands the free lock to the first live waiter and, unless it is
-- self, tells it on the channel: "token fence grant_ms". Returns the new
-- owner and fence, or nil.
local function grant(channel, self, nowms)
  local w, ttl = head(nowms)
  if not w then return nil end
  redis.call('ZREM', KEYS[3], w)
  redis.call('HDEL', KEYS[4], w)
  local more = '0'
  if redis.call('ZCARD', KEYS[3]) > 0 then more = '1' end
  local f = take(w, ttl, more)
  if w ~= self then
    redis.call('PUBLISH', channel, w .. ' ' .. fmt(f) .. ' ' .. nowms)
  end
  return w, f
end

-- enqueue adds token to the queue (keeping its place if already there).
local function enqueue(token, t, wait, ttl)
  local nowms = now_ms(t)
  redis.call('ZADD', KEYS[3], 'NX', fmt(tonumber(t[1]) * 1000000 + tonumber(t[2])), token)
  redis.call('HSET', KEYS[4], token, fmt(nowms + wait) .. ':' .. ttl)
  local keep = wait + 1000
  if redis.call('PTTL', KEYS[3]) < keep then
    redis.call('PEXPIRE', KEYS[3], keep)
    redis.call('PEXPIRE', KEYS[4], keep)
  end
  return nowms
end

-- free runs after the lock was deleted with its waiting flag set. handoff
-- 'g' hands it to the queue's head and returns (owner, fence, server_ms) of
-- the hand-over; 'n' (Redlock, whose masters must not
-- pick a holder each on their own) publishes the free notice "-" when live
-- waiters are queued, and they try again.
local function free(channel, handoff)
  local nowms = now_ms(redis.call('TIME'))
  if handoff == 'n' then
    if head(nowms) then redis.call('PUBLISH', channel, '-') end
    return nil
  end
  local w, f = grant(channel, nil, nowms)
  return w, f, nowms
end
