-- sem_pttl: its keys and arguments by name (Layouts, layout.go).
local k_holders, k_queue, k_records = KEYS[1], KEYS[2], KEYS[3]
local a_token = ARGV[1]
-- The server clock, the fencing token and the refusal of another
-- protocol's records, for every script that mints a token or refuses a
-- record with them. It comes first among the shared functions, after the
-- uncontended paths (acquire_free.lua, release.lua, sem_acquire_idle.lua
-- ...), which run first so that they finish before any helper is
-- defined: each definition makes a closure on every call of the script, a
-- large part of a free lock's acquire and release (docs/benchmarks.md).
-- A mutex's value follows (value.lua); the fencing token lives in a lock's
-- value or record (and for a lease after a Redlock release in k_last, see
-- last.lua) and nowhere else, so a lock leaves nothing behind once its
-- lease is over (see mint).

-- refuse fails the call on a record these scripts cannot read, before the
-- script wrote anything: the error reply "LOCKTAG_PROTOCOL found 1" names
-- the protocol that wrote it (found: its version, or 'unknown') and this
-- one (docs/protocol.md, records of another protocol).
local function refuse(found)
  error({err = 'LOCKTAG_PROTOCOL ' .. found .. ' 1'})
end

local function now_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function now_us(t)
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function fmt(x) return string.format('%.0f', x) end

-- COUNTER: tokens are counters, one more than the last (Redlock, whose
-- k_last is the released lock's value P{name}:f; last.lua sets it):
-- masters that remember the same token must mint the same next one.
local COUNTER = false

-- mint returns a fencing token larger than every earlier one for this
-- key: the larger of one more than prev, the lock's last token, where one
-- is at hand, and the server clock in microseconds (nowus). A lock's last
-- token is at hand while the lock exists (a hand-over, a lease that is
-- over but kept for the queue), and on Redlock for a lease after its
-- release (there only prev + 1: masters that remember the same token mint
-- the same next one, no write-back round). The clock is larger than every
-- earlier token, as long as the server clock does not go back: each token
-- is at most the clock when its chain of hand-overs began plus one per
-- hand-over, and each hand-over is a script call of its own, which takes
-- the server more than a microsecond. So a lock whose value a failover
-- rolled back (a replica that had not caught up) does not mint a token
-- the old master gave away after the replica fell behind.
local function mint(prev, nowus)
  if prev and prev > 0 then
    if COUNTER then return prev + 1 end
    return math.max(prev + 1, nowus)
  end
  return nowus
end
-- Shared by the scripts that queue waiters or hand a lock over, of every
-- kind (a mutex's own are in mutex.lua, a semaphore's in sem_common.lua,
-- after this file), after fence.lua (now_ms, now_us, fmt, mint).
-- k_queue waiter queue: zset of entries "token wait_ms ttl_ms sid[ label]"
--         scored by arrival in server microseconds (first come, first
--         served). An entry is all a waiter's details: its wait ends at
--         floor(arrival / 1000) + wait_ms; ttl_ms is the lease it asked
--         for; sid is its subscriber, one per Locker; label as the
--         lock's, which a grant copies there. Every call about one queued
--         token passes the same token, ttl, wait (its first try's), sid
--         and label (see entry), so each makes the same entry, found by
--         ZSCORE and removed by ZREM: no queue operation reads the queue
--         but the fault path of cut_off. A mutex keeps nothing else (its
--         value is k_lock, value.lua); a semaphore's and a read/write
--         lock's k_records hash keeps their permits' records
--         (sem_common.lua).
-- Each redis.call costs about as much as a small command round trip inside
-- the server, so the uncontended paths make as few as they can.

-- QUEUE_MARGIN (ms) is how much longer than its last waiter's wait a
-- queue lives.
-- (acquire_busy.lua writes it out, as QUEUE_SLACK: the fast-path test
-- keeps them equal.)
local QUEUE_MARGIN = 1000

-- keep makes key live at least ms milliseconds more.
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end

-- entry is token's queue entry (see k_queue) from the arguments of the
-- call, as passed: wait and ttl are the argument strings (a_wait_ms,
-- a_ttl_ms), never reformatted, so the entry is the same on every call
-- that passes the same.
local function entry(token, wait, ttl, sid, label)
  local e = token .. ' ' .. wait .. ' ' .. ttl .. ' ' .. sid
  if label and label ~= '' then e = e .. ' ' .. label end
  return e
end

-- waiter reads entry e, which arrived at arrival (ZSET score): its token,
-- deadline (server ms), ttl, sid and label ('': none).
local function waiter(e, arrival)
  local w, wait, ttl, sid, label = string.match(e, '^(%S+) (%d+) (%d+) (%S+) ?(.*)$')
  return w, math.floor(tonumber(arrival) / 1000) + tonumber(wait), tonumber(ttl), sid, label
end

-- pop removes waiters from the head of the queue until a live one (its
-- wait not over), and returns its token, ttl, sid and label ('': none), or
-- nil. Each entry is popped once, so the loop costs O(log N) per entry it
-- removes.
local function pop(nowms)
  while true do
    local h = redis.call('ZPOPMIN', k_queue)
    if #h == 0 then return nil end
    local w, dl, ttl, sid, label = waiter(h[1], h[2])
    if dl >= nowms then return w, ttl, sid, label end
  end
end

-- cut_off runs when a holder that came from the queue let its lease run
-- out without releasing: it gave up, paused or crashed. Every entry its
-- subscriber sid queued before nowus is dropped at once (its other
-- waiters are likely gone too), and the subscriber is told ("!sid"), so
-- those of its waiters that are alive queue again. The queue is read
-- whole here, the one place that does: a lapse is a fault, and dropping
-- the entries now keeps every other queue operation from looking for cut
-- entries. Every lock kind's lapse ends here (lapse in mutex.lua;
-- sem_purge in sem_common.lua). Returns the tokens dropped.
local function cut_off(channel, sid, nowus)
  local es = redis.call('ZRANGEBYSCORE', k_queue, '-inf', '(' .. fmt(nowus))
  local drop, tokens = {}, {}
  for _, e in ipairs(es) do
    local w, s = string.match(e, '^(%S+) %d+ %d+ (%S+)')
    if s == sid then
      drop[#drop + 1] = e
      tokens[#tokens + 1] = w
    end
  end
  -- ZREM in slices: unpack's arguments are bounded.
  for i = 1, #drop, 1000 do
    redis.call('ZREM', k_queue, unpack(drop, i, math.min(i + 999, #drop)))
  end
  redis.call('PUBLISH', channel, '!' .. sid)
  return tokens
end

-- add puts entry e in the queue; fresh says it cannot be there yet.
-- Otherwise an entry it has keeps its place. Reports whether it added it.
local function add(e, nowus, fresh)
  if not fresh and redis.call('ZSCORE', k_queue, e) then return false end
  redis.call('ZADD', k_queue, fmt(nowus), e)
  return true
end
-- sem_pttl: remaining lease of a permit the caller holds. Arguments:
-- a_token.
-- Reply: milliseconds left, or -1 when not held.
local nowms = now_ms(redis.call('TIME'))
local s = redis.call('ZSCORE', k_holders, a_token)
if not s or tonumber(s) <= nowms then
  -- Not held; a lock of another protocol is refused (sem_purge).
  local m = redis.call('ZSCORE', k_holders, '@')
  if m then refuse(m) end
  return -1
end
return tonumber(s) - nowms
