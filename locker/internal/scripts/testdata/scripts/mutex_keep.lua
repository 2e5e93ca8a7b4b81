-- The lock's value and its fencing token: in every script of the mutex,
-- before common.lua, after the uncontended paths of acquire and release
-- (acquire_free.lua, release.lua), which run first so that they finish
-- before any helper is defined: each definition makes a closure on every
-- call of the script, a large part of the free lock's acquire and release
-- (docs/benchmarks.md).
-- KEYS[1] lock: string "owner fence holds waiting granted[ label]" with the
--         lease as expiry; waiting is 1 when the lock came from the queue or
--         waiters joined while it was held (its release then goes through
--         free); granted is when the owner got it (server ms), label the
--         owner's description (Params.Label), only when it has one. What
--         follows waiting is kept as it is by every rewrite of the value.
-- KEYS[4] on Redlock only: the lock's last value, which a release leaves
--         on each master until the released lease would have ended (see
--         gone), for its token.
-- The fencing token lives in the lock's value (and for a lease after a
-- Redlock release in KEYS[4]) and nowhere else, so a lock leaves nothing
-- behind once its lease is over (see mint).

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function now_us(t)
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- parse reads the lock value; rest is what follows waiting (" granted[
-- label]", or "" for a value written before grant times were kept).
local function parse(v)
  local o, f, n, w, rest = string.match(v, '^(%S+) (%d+) (%d+) (%d)(.*)$')
  return o, f, tonumber(n), w, rest
end

local function fmt(x) return string.format('%.0f', x) end

-- mint returns a fencing token larger than every earlier one for this
-- key: one more than prev, the lock's last token, where one is at hand,
-- else the server clock in microseconds (nowus). A lock's last token is
-- at hand while the lock exists (a hand-over), and on Redlock for a lease
-- after its release (there, masters that remember the same token mint the
-- same next one: no write-back round). Once it is gone the clock is larger
-- than every earlier token, as long as the server clock does not go back
-- (a restart without persistence relies on the same): each token is at
-- most the clock when its chain of hand-overs began plus one per
-- hand-over, and each hand-over is a script call of its own, which takes
-- the server more than a microsecond.
local function mint(prev, nowus)
  if prev and prev > 0 then return prev + 1 end
  return nowus
end

-- take makes owner the holder for ttl ms, granted at nowus (server
-- microseconds), with label (nil or '': none) and a token larger than
-- prev (nil: none at hand).
local function take(owner, ttl, waiting, nowus, label, prev)
  local f = mint(prev, nowus)
  local v = owner .. ' ' .. fmt(f) .. ' 1 ' .. waiting .. ' ' .. fmt(math.floor(nowus / 1000))
  if label and label ~= '' then v = v .. ' ' .. label end
  redis.call('SET', KEYS[1], v, 'PX', ttl)
  return f
end

-- gone deletes the lock after its last hold. Redlock (handoff 'n', with
-- KEYS[4]) moves it to KEYS[4] instead, where it stays for the rest of
-- its lease, at least a lease after its token was minted: the next
-- holder's majority shares a master with this one, which then mints a
-- larger token even when its clock is behind the clock that minted this
-- one (last, mint's prev).
local function gone(handoff)
  if handoff == 'n' and KEYS[4] then
    redis.call('RENAME', KEYS[1], KEYS[4])
  else
    redis.call('DEL', KEYS[1])
  end
end

-- last is the token of the lock's last holder that this master keeps
-- (Redlock, see gone), or nil.
local function last()
  if not KEYS[4] then return nil end
  local v = redis.call('GET', KEYS[4])
  return v and tonumber(string.match(v, '^%S+ (%d+)'))
end
-- Shared by the scripts that take or hand over a lock.
-- KEYS[1] lock: see value.lua, which comes before this file in every
--         script (now_ms, now_us, parse, fmt, mint, take, gone, last).
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
--         HMGET; "?" -> "token sid fence" of the last grant from the queue,
--         until it is released.
-- Each redis.call costs about as much as a small command round trip inside
-- the server, so the uncontended paths make as few as they can.
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
-- drops them after writing its own there, so that the hash does not empty
-- (and lose its expiry) on the way.
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
  -- The grant record takes the place of the waiter's entry in a hash that
  -- keeps its expiry (see pop). It matters while waiters are queued (see
  -- lapse), and the hash lives as long as the queue.
  redis.call('HSET', KEYS[3], '?', w .. ' ' .. sid .. ' ' .. fmt(f))
  redis.call('HDEL', KEYS[3], w)
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
  local cuts = redis.call('HGET', KEYS[3], '!') or ''
  local i = string.find(cuts, ' ' .. sid .. ':', 1, true)
  if i then
    local j = string.find(cuts, ' ', i + 1, true)
    cuts = string.sub(cuts, 1, i - 1) .. (j and string.sub(cuts, j) or '')
  end
  redis.call('HSET', KEYS[3], '!', cuts .. ' ' .. sid .. ':' .. fmt(nowus))
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
-- follow says the details hash holds nothing that must outlive the queue
-- (a mutex's: waiters' entries, cut-offs, the last grant, see lapse), so
-- it takes the queue's expiry; else it is only ever stretched (a
-- semaphore's holds its permits' records too).
local function enqueue(token, nowus, wait, ttl, sid, fresh, label, follow)
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
      if follow then
        redis.call('PEXPIRE', KEYS[3], life)
      else
        keep(KEYS[3], life)
      end
    end
  end
  return nowms
end

-- free runs when the lock's last hold went with its waiting flag set.
-- handoff 'g' hands it to the queue's head, whose take overwrites the lock
-- (or deletes it when nobody is left), and returns (owner, fence,
-- server_ms, pttl_ms) of the hand-over; 'n' (Redlock, whose masters must
-- not pick a holder each on their own; the caller has deleted the lock)
-- publishes the free notice "-" when live waiters are queued, and they
-- try again. prev is the freed lock's token.
local function free(channel, handoff, window, prev)
  local nowus = now_us(redis.call('TIME'))
  local nowms = math.floor(nowus / 1000)
  if handoff == 'n' then
    if live(nowms) then redis.call('PUBLISH', channel, '-') end
    return nil
  end
  local w, f, px = grant(channel, nil, nowus, window, prev)
  if not w then redis.call('DEL', KEYS[1]) end
  return w, f, nowms, px
end
-- keep: drop one hold; the last keeps the lock for keep_ms more instead of
-- freeing it (keep after the handler: a resubmit within the window finds
-- the lock busy). The owner token stays, but its holder is done: nobody
-- renews or releases it, and the lock ends by itself. ARGV: token, keep_ms.
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then).
local token, keepms = ARGV[1], tonumber(ARGV[2])
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local o, f, n, w, rest = parse(v)
if o ~= token then return -1 end
if n > 1 then
  redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. (n - 1) .. ' ' .. w .. rest, 'KEEPTTL')
  return n - 1
end
redis.call('SET', KEYS[1], o .. ' ' .. f .. ' 1 ' .. w .. rest, 'PX', keepms)
if w == '1' then
  -- Released as far as the queue is concerned: the grant record goes (or
  -- the lock's end would read as a lapsed grant), and waiters learn when
  -- the kept lock ends, so they re-check then.
  redis.call('HDEL', KEYS[3], '?')
  redis.call('PUBLISH', chan(), o .. ' ' .. f .. ' ' .. now_ms(redis.call('TIME')) .. ' ' .. keepms)
end
return 0
