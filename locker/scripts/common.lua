-- Shared by the scripts that take or hand over a lock.
-- KEYS[1] lock: see value.lua, which comes before this file in every
--         script (now_ms, now_us, parse, fmt, mint, take, gone, last).
-- KEYS[2] waiter queue: zset of waiter tokens scored by arrival in server
--         microseconds (first come, first served). A token's entry is found
--         by ZSCORE and removed by ZREM: no queue operation reads the queue.
-- KEYS[3] waiter details: hash. token -> "deadline_ms ttl_ms sid[ label]"
--         (sid: the waiter's subscriber, one per Locker; label as the
--         lock's, which a grant copies there); "!"..sid -> a cut-off in
--         server microseconds: that subscriber's entries that arrived before
--         it are gone (a grant to one of them lapsed); "?" -> "token sid
--         fence" of the last grant from the queue, until it is released.
-- Each redis.call costs about as much as a small command round trip inside
-- the server, so the uncontended paths make as few as they can.
-- The lock's channel is KEYS[1]..':c' (see names in scripts.go): made
-- here, on the paths that publish, rather than sent with every call.
local function chan() return KEYS[1] .. ':c' end

-- keep makes key live at least ms milliseconds more.
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end

-- cut reports whether sid's entry that arrived at arrival (microseconds)
-- was cut off by a lapsed grant.
local function cut(sid, arrival)
  local c = redis.call('HGET', KEYS[3], '!' .. sid)
  return c ~= false and arrival < tonumber(c)
end

-- pop removes waiters from the head of the queue until a live one (its wait
-- not over, not cut off), and returns its token, ttl, sid and label ('':
-- none), or nil. Each entry is popped once, so the loop costs O(log N) per
-- entry it removes.
local function pop(nowms)
  while true do
    local h = redis.call('ZPOPMIN', KEYS[2])
    if #h == 0 then return nil end
    local w = h[1]
    local info = redis.call('HGET', KEYS[3], w)
    if info then
      redis.call('HDEL', KEYS[3], w)
      local dl, ttl, sid, label = string.match(info, '^(%d+) (%d+) (%S+) ?(.*)$')
      if tonumber(dl) >= nowms and not cut(sid, tonumber(h[2])) then
        return w, tonumber(ttl), sid, label
      end
    end
  end
end

-- live reports whether a live waiter is queued, dropping dead ones first
-- (Redlock's free notices).
local function live(nowms)
  while true do
    local h = redis.call('ZRANGE', KEYS[2], 0, 0)
    if #h == 0 then return false end
    local info = redis.call('HGET', KEYS[3], h[1])
    if info then
      local dl = string.match(info, '^(%d+)')
      if tonumber(dl) >= nowms then return true end
    end
    redis.call('ZREM', KEYS[2], h[1])
    redis.call('HDEL', KEYS[3], h[1])
  end
end

-- grant hands the free lock to the first live waiter and records the grant.
-- A waiter other than self gets the lock for at most window ms: it confirms
-- by extending the lease (its first renewal), so a grant to a waiter that
-- has gone lapses within the window instead of a whole lease. Every process
-- waiting on the key is told "token fence server_ms pttl_ms", so each can
-- re-check when that lease ends. prev is the lock's last token, when one
-- is at hand (see mint). Returns the new owner, fence and pttl, or nil.
local function grant(channel, self, nowus, window, prev)
  local nowms = math.floor(nowus / 1000)
  local w, ttl, sid, label = pop(nowms)
  if not w then
    redis.call('HDEL', KEYS[3], '?')
    return nil
  end
  local px = ttl
  if w ~= self then px = math.min(ttl, window) end
  local f = take(w, px, '1', nowus, label, prev)
  redis.call('HSET', KEYS[3], '?', w .. ' ' .. sid .. ' ' .. fmt(f))
  keep(KEYS[3], px + 1000)
  if w ~= self or redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('PUBLISH', channel, w .. ' ' .. fmt(f) .. ' ' .. nowms .. ' ' .. px)
  end
  return w, f, px
end

-- cut_off runs when a holder that came from the queue let its lease run out
-- without releasing: it gave up, paused or crashed. Every entry its
-- subscriber sid queued before nowus is cut off (its other waiters are
-- likely gone too), and the subscriber is told ("!sid"), so those of its
-- waiters that are alive queue again. Every lock kind's lapse ends here
-- (lapse below; sem_purge in sem_common.lua).
local function cut_off(channel, sid, nowus)
  redis.call('HSET', KEYS[3], '!' .. sid, fmt(nowus))
  redis.call('PUBLISH', channel, '!' .. sid)
end

-- lapse runs when the lock is found free while waiters are queued. If the
-- last grant from the queue is still recorded, its grantee's lease ran out
-- (a release drops the record, and so does a waiter that queues behind a
-- holder that did not come from the queue: acquire.lua): its subscriber is
-- cut off. Returns the grant's token (mint's prev), or nil.
local function lapse(channel, nowus)
  local g = redis.call('HGET', KEYS[3], '?')
  if not g then return nil end
  redis.call('HDEL', KEYS[3], '?')
  local _, sid, f = string.match(g, '^(%S+) (%S+) (%d+)$')
  cut_off(channel, sid, nowus)
  return tonumber(f)
end

-- enqueue adds token to the queue; fresh says it cannot be there yet.
-- Otherwise an entry it has keeps its place, unless it was cut off. label
-- (nil or '': none) is what the lock will say about token once granted.
local function enqueue(token, nowus, wait, ttl, sid, fresh, label)
  local nowms = math.floor(nowus / 1000)
  local add = fresh
  if not fresh then
    local s = redis.call('ZSCORE', KEYS[2], token)
    add = not s or cut(sid, tonumber(s))
  end
  if add then
    redis.call('ZADD', KEYS[2], fmt(nowus), token)
    local info = fmt(nowms + wait) .. ' ' .. ttl .. ' ' .. sid
    if label and label ~= '' then info = info .. ' ' .. label end
    redis.call('HSET', KEYS[3], token, info)
    local life = wait + 1000
    if redis.call('PTTL', KEYS[2]) < life then
      redis.call('PEXPIRE', KEYS[2], life)
      keep(KEYS[3], life)
    end
  end
  return nowms
end

-- free runs after the lock was deleted with its waiting flag set. handoff
-- 'g' hands it to the queue's head and returns (owner, fence, server_ms,
-- pttl_ms) of the hand-over; 'n' (Redlock, whose masters must not pick a
-- holder each on their own) publishes the free notice "-" when live waiters
-- are queued, and they try again. prev is the freed lock's token.
local function free(channel, handoff, window, prev)
  local nowus = now_us(redis.call('TIME'))
  local nowms = math.floor(nowus / 1000)
  if handoff == 'n' then
    if live(nowms) then redis.call('PUBLISH', channel, '-') end
    return nil
  end
  local w, f, px = grant(channel, nil, nowus, window, prev)
  return w, f, nowms, px
end
