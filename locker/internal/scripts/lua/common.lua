-- Shared by the scripts that queue waiters or hand a lock over, of every
-- kind (a mutex's own are in mutex.lua, after this file).
-- KEYS[1] lock: see value.lua, which comes before this file in every
--         script (now_ms, now_us, fmt, mint; the mutex's value).
-- KEYS[2] waiter queue: zset of waiter tokens scored by arrival in server
--         microseconds (first come, first served). A token's entry is found
--         by ZSCORE and removed by ZREM: no queue operation reads the queue.
-- KEYS[3] waiter details: hash, always with an expiry (every script that
--         can make it sets one, at least as long as the queue's), and
--         there whenever KEYS[2] is (each queued token has its entry
--         here). token -> "deadline_ms ttl_ms sid[ label]" (sid:
--         the waiter's subscriber, one per Locker; label as the lock's,
--         which a grant copies there); "!" -> " sid:us sid:us ...", the
--         subscribers cut off and when (server microseconds): a
--         subscriber's entries that arrived before its cut-off are gone (a
--         grant to one of them lapsed), read with a waiter's entry in one
--         HMGET.
-- Each redis.call costs about as much as a small command round trip inside
-- the server, so the uncontended paths make as few as they can.

-- QUEUE_MARGIN (ms) is how much longer than its last waiter's wait a
-- queue lives.
local QUEUE_MARGIN = 1000

-- The lock's channel is KEYS[1]..':c' (see package names): made
-- here, on the paths that publish, rather than sent with every call.
local function chan() return KEYS[1] .. ':c' end

-- keep makes key live at least ms milliseconds more.
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end

-- cut reports whether sid's entry that arrived at arrival (microseconds)
-- was cut off by a lapsed grant; cuts is KEYS[3]'s "!" (false: none; nil:
-- not read yet).
local function cut(sid, arrival, cuts)
  if cuts == nil then cuts = redis.call('HGET', KEYS[3], '!') end
  if not cuts then return false end
  local i = string.find(cuts, ' ' .. sid .. ':', 1, true)
  return i ~= nil and arrival < tonumber(string.match(cuts, '^(%d+)', i + #sid + 2))
end

-- pop removes waiters from the head of the queue until a live one (its wait
-- not over, not cut off), and returns its token, ttl, sid and label ('':
-- none), or nil. Each entry is popped once, so the loop costs O(log N) per
-- entry it removes. The live one's details stay in KEYS[3]: the caller
-- drops them (a semaphore's after writing the permit's record there, so
-- that the hash does not empty and lose its expiry on the way).
local function pop(nowms)
  while true do
    local h = redis.call('ZPOPMIN', KEYS[2])
    if #h == 0 then return nil end
    local w = h[1]
    local info = redis.call('HMGET', KEYS[3], w, '!')
    if info[1] then
      local dl, ttl, sid, label = string.match(info[1], '^(%d+) (%d+) (%S+) ?(.*)$')
      if tonumber(dl) >= nowms and not cut(sid, tonumber(h[2]), info[2]) then
        return w, tonumber(ttl), sid, label
      end
      redis.call('HDEL', KEYS[3], w)
    end
  end
end

-- cut_off runs when a holder that came from the queue let its lease run out
-- without releasing: it gave up, paused or crashed. Every entry its
-- subscriber sid queued before nowus is cut off (its other waiters are
-- likely gone too), and the subscriber is told ("!sid"), so those of its
-- waiters that are alive queue again. Every lock kind's lapse ends here
-- (lapse in mutex.lua; sem_purge in sem_common.lua).
local function cut_off(channel, sid, nowus)
  local cuts = redis.call('HGET', KEYS[3], '!') or ''
  local i = string.find(cuts, ' ' .. sid .. ':', 1, true)
  if i then
    local j = string.find(cuts, ' ', i + 1, true)
    cuts = string.sub(cuts, 1, i - 1) .. (j and string.sub(cuts, j) or '')
  end
  redis.call('HSET', KEYS[3], '!', cuts .. ' ' .. sid .. ':' .. fmt(nowus))
  redis.call('PUBLISH', channel, '!' .. sid)
end

-- add puts token in the queue; fresh says it cannot be there yet.
-- Otherwise an entry it has keeps its place, unless it was cut off. label
-- (nil or '': none) is what the lock will say about token once granted.
-- Reports whether it added an entry.
local function add(token, nowus, wait, ttl, sid, fresh, label)
  local nowms = math.floor(nowus / 1000)
  local added = fresh
  if not fresh then
    local s = redis.call('ZSCORE', KEYS[2], token)
    added = not s or cut(sid, tonumber(s))
  end
  if added then
    redis.call('ZADD', KEYS[2], fmt(nowus), token)
    local info = fmt(nowms + wait) .. ' ' .. ttl .. ' ' .. sid
    if label and label ~= '' then info = info .. ' ' .. label end
    redis.call('HSET', KEYS[3], token, info)
  end
  return added
end

-- enqueue adds token to a semaphore's (or read/write lock's) queue (see
-- add) and makes the queue live until its wait is over and a second more;
-- the details hash is only ever stretched (it holds the permits' records
-- too). The mutex keeps its queue's life in its value instead (join in
-- mutex.lua).
local function enqueue(token, nowus, wait, ttl, sid, fresh, label)
  if add(token, nowus, wait, ttl, sid, fresh, label) then
    local life = wait + QUEUE_MARGIN
    if redis.call('PTTL', KEYS[2]) < life then
      redis.call('PEXPIRE', KEYS[2], life)
      keep(KEYS[3], life)
    end
  end
end
