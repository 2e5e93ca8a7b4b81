-- Shared by the scripts that take or hand over a lock.
-- KEYS[1] lock: string "owner fence holds waiting" with the lease as expiry;
--         waiting is 1 when the queue may hold waiters (release then hands over).
-- KEYS[2] fencing counter (expires FENCE_TTL after it was seeded)
-- KEYS[3] waiter queue (zset of "token deadline_ms ttl_ms", scored by arrival
--         in server microseconds: first come, first served)
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

-- member splits a queue entry into token, deadline and ttl.
local function member(m)
  local w, dl, ttl = string.match(m, '^(%S+) (%d+) (%d+)$')
  return w, tonumber(dl), tonumber(ttl)
end

-- pop removes waiters from the head of the queue until a live one (whose
-- wait is not over), and returns its token and ttl, or nil. The queue
-- vanishes when it empties.
local function pop(nowms)
  while true do
    local h = redis.call('ZPOPMIN', KEYS[3])
    if #h == 0 then return nil end
    local w, dl, ttl = member(h[1])
    if dl >= nowms then return w, ttl end
  end
end

-- live reports whether a live waiter is queued, dropping dead ones first.
local function live(nowms)
  while true do
    local h = redis.call('ZRANGE', KEYS[3], 0, 0)
    if #h == 0 then return false end
    local _, dl = member(h[1])
    if dl >= nowms then return true end
    redis.call('ZREM', KEYS[3], h[1])
  end
end

-- queued returns token's queue entry, or nil (a scan: rare paths only).
local function queued(token)
  local p = token .. ' '
  for _, m in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    if string.sub(m, 1, #p) == p then return m end
  end
  return nil
end

-- grant hands the free lock to the first live waiter and, unless it is
-- self, tells it on the channel: "token fence grant_ms". Returns the new
-- owner and fence, or nil.
local function grant(channel, self, nowms)
  local w, ttl = pop(nowms)
  if not w then return nil end
  local more = '0'
  if redis.call('EXISTS', KEYS[3]) == 1 then more = '1' end
  local f = take(w, ttl, more)
  if w ~= self then
    redis.call('PUBLISH', channel, w .. ' ' .. fmt(f) .. ' ' .. nowms)
  end
  return w, f
end

-- enqueue adds token to the queue; fresh says it cannot be there yet
-- (otherwise an entry it has keeps its place).
local function enqueue(token, t, wait, ttl, fresh)
  local nowms = now_ms(t)
  if fresh or not queued(token) then
    local arrival = fmt(tonumber(t[1]) * 1000000 + tonumber(t[2]))
    redis.call('ZADD', KEYS[3], arrival, token .. ' ' .. fmt(nowms + wait) .. ' ' .. ttl)
  end
  local keep = wait + 1000
  if redis.call('PTTL', KEYS[3]) < keep then
    redis.call('PEXPIRE', KEYS[3], keep)
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
    if live(nowms) then redis.call('PUBLISH', channel, '-') end
    return nil
  end
  local w, f = grant(channel, nil, nowms)
  return w, f, nowms
end
