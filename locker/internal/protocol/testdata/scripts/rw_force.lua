-- rw_force: its keys and arguments by name (Layouts, layout.go).
local k_holders, k_queue, k_records = KEYS[1], KEYS[2], KEYS[3]
local a_channel, a_reason, a_handoff, a_window_ms = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
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
-- Shared by the semaphore scripts (a lock with N permits), after fence.lua
-- and common.lua.
-- k_holders permits: zset of holder tokens scored by the end of their
--         lease (server ms); each permit is a lease of its own, so a
--         holder that crashed frees its permit when its lease ends.
-- k_queue waiter queue, as in common.lua.
-- k_records the permits' records: hash of "=" .. token -> "fence holds
--         granted[ label]" for each permit holder (granted: server ms;
--         label: as a mutex's), "?" .. token -> sid for a holder that came
--         from the queue (the grant record: its subscriber), "#" -> the
--         limit the last holder or waiter came with, which releases use to
--         hand permits on (and Inspect shows), "Q" -> "1" once a waiter
--         queued (see sem_release.lua), and "F" -> the last fencing token
--         minted (every permit, and every read/write lock's writer, mints
--         one; see mint in fence.lua); a read/write lock's also "W" and
--         "~" .. token (rw_kind.lua).
-- The details hash exists whenever permits are held or waiters queued, so
-- a take on those paths has the lock's last token at hand (F) and mints
-- one more (mint in fence.lua); the clock it falls back on is the queued
-- paths' nowms * 1000. An idle lock has no details, and its take mints
-- from the clock in microseconds (sem_acquire_idle.lua).

-- The lock's channel is k_holders..':c' (see package names), as a
-- mutex's is its k_lock's: made here, on the paths that publish.
local function chan() return k_holders .. ':c' end

-- sem_purge drops the permits whose lease has ended. A permit that came
-- from the queue and ended unreleased is a lapsed grant, as a mutex's (see
-- lapse in common.lua): its subscriber's entries queued before now are cut
-- off, so a process that froze or crashed with many waiters queued costs
-- the others one grant window, not one per waiter. Permits granted
-- together and lapsed together cut their subscriber off once.
-- A lock of another protocol holds the member '@' in k_holders, scored by
-- that protocol's version (docs/protocol.md): a lease long over to these
-- scripts, so the purge, which every call that changes a lock makes first
-- (or after finding its caller's live permit), meets it first and
-- refuses the lock before anything is written.
local function sem_purge(nowms)
  local gone = redis.call('ZRANGEBYSCORE', k_holders, '-inf', nowms)
  if gone[1] == '@' then refuse(redis.call('ZSCORE', k_holders, '@')) end
  local done = {}
  for _, t in ipairs(gone) do
    local sid = redis.call('HGET', k_records, '?' .. t)
    redis.call('ZREM', k_holders, t)
    redis.call('HDEL', k_records, '=' .. t, '?' .. t)
    if sid and not done[sid] then
      done[sid] = true
      local cut = cut_off(chan(), sid, nowms * 1000)
      -- A read/write waiter's kind goes with its entry.
      for i, w in ipairs(cut) do cut[i] = '~' .. w end
      for i = 1, #cut, 1000 do
        redis.call('HDEL', k_records, unpack(cut, i, math.min(i + 999, #cut)))
      end
    end
  end
end

-- enqueue adds entry e to a semaphore's (or read/write lock's) queue (see
-- add) and makes the queue live until its wait is over and a second more;
-- the hash k_records, which the caller wrote first (it holds the permits'
-- records and "Q", so it exists whenever the queue does), is only ever
-- stretched. The mutex keeps its queue's life in its value instead (join
-- in mutex.lua).
local function enqueue(e, nowus, wait, fresh)
  if add(e, nowus, fresh) then
    local life = wait + QUEUE_MARGIN
    if redis.call('PTTL', k_queue) < life then
      redis.call('PEXPIRE', k_queue, life)
      keep(k_records, life)
    end
  end
end

-- sem_marked refuses a lock of another protocol (see sem_purge) on a path
-- that does not purge.
local function sem_marked()
  local m = redis.call('ZSCORE', k_holders, '@')
  if m then refuse(m) end
end

-- sem_expire makes the holders and details keys live at least px + 1s
-- more. (A take on an idle lock sets both outright: sem_acquire_idle.lua.)
local function sem_expire(px)
  keep(k_holders, px + 1000)
  keep(k_records, px + 1000)
end

-- holder_info is a permit holder's record: "fence holds granted[ label]".
local function holder_info(f, nowms, label)
  local h = fmt(f) .. ' 1 ' .. fmt(nowms)
  if label and label ~= '' then h = h .. ' ' .. label end
  return h
end

-- sem_take gives token (described by label) a permit for px ms of limit,
-- and returns its fencing token; sid is the subscriber of a waiter granted
-- from the queue (nil for a caller that takes at once).
local function sem_take(token, px, nowms, label, limit, sid)
  local f = mint(tonumber(redis.call('HGET', k_records, 'F')), nowms * 1000)
  redis.call('ZADD', k_holders, fmt(nowms + px), token)
  redis.call('HSET', k_records, '=' .. token, holder_info(f, nowms, label), '#', limit, 'F', fmt(f))
  if sid then redis.call('HSET', k_records, '?' .. token, sid) end
  sem_expire(px)
  return f
end

-- sem_held returns token's fence, holds, lease left and the rest of its
-- record (" granted[ label]"), or nil.
local function sem_held(token, nowms)
  local s = redis.call('ZSCORE', k_holders, token)
  if not s or tonumber(s) <= nowms then return nil end
  local h = redis.call('HGET', k_records, '=' .. token)
  if not h then return nil end
  local f, n, rest = string.match(h, '^(%d+) (%d+)(.*)$')
  return f, tonumber(n), tonumber(s) - nowms, rest
end

-- sem_left is the lease left of the permit that ends first (when a busy
-- caller should look again), or -2 when none is held.
local function sem_left(nowms)
  local e = redis.call('ZRANGE', k_holders, 0, 0, 'WITHSCORES')
  if #e == 0 then return -2 end
  return tonumber(e[2]) - nowms
end

-- tell tells waiter w of its grant (fence f at server ms nowms, for px ms)
-- on the channel, or lists it in told when its subscriber sid is near.
local function tell(w, f, nowms, px, sid, near, told)
  if near and sid == near then
    local n = #told
    told[n + 1], told[n + 2], told[n + 3], told[n + 4] = w, f, tonumber(nowms), px
  else
    redis.call('PUBLISH', chan(), w .. ' ' .. fmt(f) .. ' ' .. nowms .. ' ' .. px)
  end
end

-- sem_grant hands free permits to the live waiters at the head of the
-- queue, first come first served. A waiter other than self gets its permit
-- for at most window ms (it confirms with its first renewal, as a mutex's
-- grant) and is told on the channel "token fence server_ms pttl_ms" —
-- but a waiter whose subscriber is near (a release's caller, see grant in
-- mutex.lua) gets its whole ttl and is listed in told instead (token,
-- fence, server_ms, pttl_ms), for the caller's reply. Returns self's fence
-- and pttl when self got one.
local function sem_grant(self, nowms, window, limit, near, told)
  local mf, mpx
  while redis.call('ZCARD', k_holders) < limit do
    local w, ttl, sid, label = pop(nowms)
    if not w then break end
    local px = ttl
    if w ~= self and sid ~= near then px = math.min(ttl, window) end
    local f = sem_take(w, px, nowms, label, limit, sid)
    if w == self then
      mf, mpx = f, px
    else
      tell(w, f, nowms, px, sid, near, told)
    end
  end
  return mf, mpx
end

-- sem_drop frees token's permit and, when waiters are queued, hands free
-- permits on with hand_on (the kind's: sem_kind.lua, rw_kind.lua). A
-- leaving waiter's (sem_leave.lua); a release does the same written out
-- (sem_release.lua).
local function sem_drop(token, nowms, window, hand_on)
  redis.call('ZREM', k_holders, token)
  redis.call('HDEL', k_records, '=' .. token, '?' .. token)
  if redis.call('EXISTS', k_queue) == 1 then
    sem_purge(nowms)
    hand_on(nowms, window)
  end
end

-- sem_reenter answers a caller whose token already holds here: a retried
-- take (mode 'a' or 'r') reports the hold as it is; a re-entry ('e') adds a
-- hold and stretches the lease to ttl. A re-entry whose hold is gone is
-- refused (it must not take afresh). nil: go on with a take.
local function sem_reenter(token, ttl, mode, nowms)
  local f, n, left, rest = sem_held(token, nowms)
  if not f then
    if mode == 'e' then return {0, 0, 0, -2, 0} end
    return nil
  end
  if mode ~= 'e' then
    return {1, tonumber(f), n, left, 0}
  end
  n = n + 1
  redis.call('HSET', k_records, '=' .. token, f .. ' ' .. n .. rest)
  if left < ttl then
    redis.call('ZADD', k_holders, 'XX', fmt(nowms + ttl), token)
    sem_expire(ttl)
    left = ttl
  end
  return {2, tonumber(f), n, left, 0}
end
-- A read/write lock (after common.lua and sem_common.lua): the holders are
-- the permits zset k_holders — many readers, or one writer, whose token is
-- "W" in the records hash k_records. A waiter's kind is "~"..token there.

-- rw_writer returns the live writer's token, or nil.
local function rw_writer()
  local w = redis.call('HGET', k_records, 'W')
  if w and redis.call('ZSCORE', k_holders, w) then return w end
  if w then redis.call('HDEL', k_records, 'W') end
  return nil
end

-- rw_free reports whether a holder of kind ('r' or 'w') may enter now,
-- queue aside: a writer when nobody holds, a reader when no writer does.
local function rw_free(kind)
  if kind == 'w' then return redis.call('ZCARD', k_holders) == 0 end
  return rw_writer() == nil
end

-- rw_take makes token (described by label) a holder of kind for px ms. A
-- writer mints a fencing token; a reader gets the current one (F: the
-- last writer's, kept for a while after the lock goes idle, see
-- rw_idle.lua), or, when none is at hand, a token minted for it, which
-- then is the current one. sid is the subscriber of a waiter granted from
-- the queue (see sem_purge).
local function rw_take(token, kind, px, nowms, label, sid)
  local f = tonumber(redis.call('HGET', k_records, 'F'))
  if kind == 'w' or not f then f = mint(f, nowms * 1000) end
  redis.call('ZADD', k_holders, fmt(nowms + px), token)
  if kind == 'w' then
    redis.call('HSET', k_records, '=' .. token, holder_info(f, nowms, label), 'F', fmt(f), 'W', token)
  else
    redis.call('HSET', k_records, '=' .. token, holder_info(f, nowms, label), 'F', fmt(f))
  end
  if sid then redis.call('HSET', k_records, '?' .. token, sid) end
  sem_expire(px)
  return f
end

-- rw_grant admits waiters from the head of the queue in arrival order: a
-- run of readers together while no writer holds, or one writer when nobody
-- holds; it stops at the first waiter that cannot enter, so a queued
-- writer is never overtaken by readers that came after it. Waiters other
-- than self are granted for at most window ms and told on the channel (or
-- in told: see sem_grant). Returns self's fence and pttl when self was
-- admitted.
local function rw_grant(self, nowms, window, near, told)
  local mf, mpx
  while true do
    local h = redis.call('ZRANGE', k_queue, 0, 0, 'WITHSCORES')
    if #h == 0 then break end
    local w, dl, ttl, sid, label = waiter(h[1], h[2])
    local kind = redis.call('HGET', k_records, '~' .. w) or 'r'
    local live = dl >= nowms
    if live and not rw_free(kind) then break end
    redis.call('ZREM', k_queue, h[1])
    redis.call('HDEL', k_records, '~' .. w)
    if live then
      local px = ttl
      if w ~= self and sid ~= near then px = math.min(ttl, window) end
      local f = rw_take(w, kind, px, nowms, label, sid)
      if w == self then
        mf, mpx = f, px
      else
        tell(w, f, nowms, px, sid, near, told)
      end
      if kind == 'w' then break end
    end
  end
  return mf, mpx
end

local function hand_on(nowms, window, near, told)
  rw_writer() -- forget a writer that left
  rw_grant(nil, nowms, window, near, told)
end
-- sem_force: free every holder of a semaphore or a read/write lock (after
-- the kind's file: hand_on), as if each had released: free permits go to
-- the queue's head, the fencing counter is left alone. Arguments as
-- force.lua's.
-- The holders' Lockers are told "token,token... reason" on the control
-- channel. Reply: {} when nobody holds (nothing is touched), else the
-- writer's token ('' none), then per holder: token, "fence holds[ granted[
-- label]]".
local window = tonumber(a_window_ms)
local nowms = now_ms(redis.call('TIME'))
sem_purge(nowms)
local hs = redis.call('ZRANGE', k_holders, 0, -1)
if #hs == 0 then return {} end
local out = {redis.call('HGET', k_records, 'W') or ''}
for _, t in ipairs(hs) do
  out[#out + 1] = t
  out[#out + 1] = redis.call('HGET', k_records, '=' .. t) or '0 0'
  redis.call('HDEL', k_records, '=' .. t, '?' .. t)
end
redis.call('DEL', k_holders)
redis.call('HDEL', k_records, 'W')
redis.call('PUBLISH', a_channel, table.concat(hs, ',') .. ' ' .. a_reason)
if redis.call('EXISTS', k_queue) == 1 then
  hand_on(nowms, window)
end
return out
