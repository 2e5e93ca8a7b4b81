-- mutex_keep: its keys and arguments by name (Layouts, layout.go).
local k_lock, k_queue, k_unused, k_last = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local a_token, a_keep_ms = ARGV[1], ARGV[2]
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
-- A mutex's value, for the mutex's scripts, after fence.lua (refuse, fmt,
-- mint); last.lua (Redlock's last value) follows it where the layout
-- passes k_last.
-- k_lock: string "owner fence holds queue granted ends from[ label]":
--         queue is 0 while nobody waits, else the server ms until which
--         the waiter queue (k_queue, see common.lua) may live;
--         granted is when the owner got the lock and ends when its lease
--         ends (server ms); from is '-' for a lock taken at once, else the
--         subscriber of the waiter it was granted to from the queue (see
--         lapse in mutex.lua); label is the owner's description
--         (Params.Label), only when it has one. The key expires at the
--         later of ends and queue (see put): a lock that has no key has
--         nobody queued for it, so a free lock is taken with one SET NX
--         (acquire_free.lua), and a value whose ends has passed while
--         queue is set is a lease that is over, kept for the queue's sake:
--         no holder (see held).

-- NOT_QUEUED is from's value for a lock that did not come from the queue.
local NOT_QUEUED = '-'

-- refuse_value refuses v, a string record of another protocol ("@version
-- pxat ..."), or one no protocol wrote; taken: the call took it with
-- GETDEL, and puts it back first, with the expiry it carries.
local function refuse_value(v, taken)
  local ver, at = string.match(v, '^@(%d+) (%d+) ')
  if taken then
    if at and at ~= '0' then
      redis.call('SET', k_lock, v, 'PXAT', at)
    else
      redis.call('SET', k_lock, v)
    end
  end
  refuse(ver or 'unknown')
end

-- parse reads a mutex's value into a record (owner, fence, holds, queue,
-- granted, ends, from, label; label '' for none). A value of another
-- protocol (it begins with '@'; tokens never do), or one it cannot read, is
-- refused (refuse_value; taken as there).
local function parse(v, taken)
  local o, f, n, q, g, e, from, label
  if string.byte(v) ~= 64 then
    o, f, n, q, g, e, from, label = string.match(v, '^(%S+) (%d+) (%d+) (%d+) (%d+) (%d+) (%S+) ?(.*)$')
  end
  if not o then refuse_value(v, taken) end
  return {owner = o, fence = tonumber(f), holds = tonumber(n), queue = tonumber(q), granted = g,
    ends = tonumber(e), from = from, label = label}
end

-- held reports whether l's lease is running at nowms. A key without a
-- queue expires with its lease, so only a queued lock's is compared.
local function held(l, nowms)
  return l.queue == 0 or l.ends > nowms
end

-- put writes l as the lock's value, expiring at the later of its lease's
-- end and its queue's: every write of the value goes through here (or
-- writes the same, acquire_free.lua), so the key's expiry is always that.
local function put(l)
  local v = l.owner .. ' ' .. fmt(l.fence) .. ' ' .. fmt(l.holds) .. ' ' .. fmt(l.queue) .. ' ' .. l.granted .. ' ' .. fmt(l.ends) .. ' ' .. l.from
  if l.label ~= '' then v = v .. ' ' .. l.label end
  redis.call('SET', k_lock, v, 'PXAT', fmt(math.max(l.ends, l.queue)))
end

-- restore writes v, the value l was read from, back as it was (a value a
-- GETDEL took that must stay), with the expiry it had.
local function restore(l, v)
  redis.call('SET', k_lock, v, 'PXAT', fmt(math.max(l.ends, l.queue)))
end

-- take makes owner the holder for ttl ms, granted at nowus (server
-- microseconds), with label (nil or '': none) and a token larger than
-- prev (nil: none at hand); queue and from as in the value. Returns the
-- token.
local function take(owner, ttl, queue, nowus, label, prev, from)
  local f = mint(prev, nowus)
  local nowms = math.floor(nowus / 1000)
  put({owner = owner, fence = f, holds = 1, queue = queue, granted = fmt(nowms), ends = nowms + ttl,
    from = from, label = label or ''})
  return f
end
-- The lock's last value (Redlock only), after value.lua, in the mutex
-- scripts whose layout passes k_last: P{name}:f, which a release leaves
-- on each master until the released lease would have ended (see gone),
-- for its token. A script without k_last mints from the clock (COUNTER
-- false) and keeps no last value.
COUNTER = k_last ~= nil and string.sub(k_last, -2) == ':f'

-- gone: the last hold of l went and its key is deleted. Redlock (handoff
-- 'n', with k_last) keeps the value in k_last for the rest of its lease,
-- at least a lease after its token was minted: the next holder's majority
-- shares a master with this one, which then mints a larger token even
-- when its clock is behind the clock that minted this one (last, mint's
-- prev).
local function gone(l, handoff, v)
  if handoff == 'n' and k_last then
    redis.call('SET', k_last, v, 'PXAT', fmt(l.ends))
  end
end

-- last is the token of the lock's last holder that this master keeps
-- (Redlock, see gone), or nil.
local function last()
  if not k_last then return nil end
  local v = redis.call('GET', k_last)
  if v and string.byte(v) == 64 then refuse(string.match(v, '^@(%d+)') or 'unknown') end
  return v and tonumber(string.match(v, '^%S+ (%d+)'))
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
-- A mutex's queue and hand-over, after value.lua and common.lua. The
-- lock's value keeps its queue's life (queue, see value.lua): the lock key
-- lives at least as long as the queue, so that a lock without a key has
-- nobody queued for it. A mutex's waiters are their queue entries alone
-- (k_queue, see common.lua): it writes no third key (k_unused; a
-- bridge's k_plain is bridge.lua's).

-- The lock's channel is k_lock..':c' (see package names): made here, on
-- the paths that publish, rather than sent with every call.
local function chan() return k_lock .. ':c' end

-- QUEUE_SLACK (ms) is how much longer than needed a queue's life is made
-- when it must grow, so that a steady stream of waiters stretches it (and
-- rewrites the lock's value) once in a while rather than on every arrival.
-- (acquire_busy.lua writes it out.)
local QUEUE_SLACK = 1000

-- join adds entry e (see entry in common.lua) to the queue and returns
-- the queue's life (server ms): life, the life it had (0: none), or a
-- longer one when this waiter's wait ends later. The queue expires at the
-- returned life; the caller writes it to the lock's value when it changed
-- (put in value.lua), so the lock key lives as long. A queue whose last
-- entry went (popped by a grant) comes back here without an expiry, hence
-- the look at it: a grant that empties the queue cannot tell without a
-- command of its own, so dropping this one would only move it to the
-- hand-over.
local function join(life, e, nowus, wait, fresh)
  if not add(e, nowus, fresh) then return life end
  local need = math.floor(nowus / 1000) + wait + QUEUE_MARGIN
  if life < need then
    life = need + QUEUE_SLACK
  elseif redis.call('PTTL', k_queue) ~= -1 then
    return life
  end
  redis.call('PEXPIREAT', k_queue, fmt(life))
  return life
end

-- live reports whether a live waiter is queued, dropping dead ones first
-- (Redlock's free notices).
local function live(nowms)
  while true do
    local h = redis.call('ZRANGE', k_queue, 0, 0, 'WITHSCORES')
    if #h == 0 then return false end
    local _, dl = waiter(h[1], h[2])
    if dl >= nowms then return true end
    redis.call('ZREM', k_queue, h[1])
  end
end

-- grant hands the free lock to the first live waiter, which the lock's
-- value then names as granted from the queue (from: its subscriber, see
-- lapse). A waiter other than self gets the lock for at most window ms: it
-- confirms by extending the lease (its first renewal), so a grant to a
-- waiter that has gone lapses within the window instead of a whole lease.
-- A waiter whose subscriber is near (below) gets its whole ttl: its
-- process is the caller's, alive, and wakes it from the reply, however
-- busy (a burst's thousands of goroutines) it is.
-- Every process waiting on the key is told "token fence server_ms
-- pttl_ms", so each can re-check when that lease ends; but not when the
-- waiter's subscriber is near, the subscriber of the caller (a release),
-- which wakes the waiter from the reply: a notice the waiter's process
-- would read as well costs that process a wake-up on every hand-over.
-- Other processes' waiters then re-check once at the lease end they last
-- heard of, and hear again at the next grant told. prev is the lock's
-- last token, when one is at hand (see mint); life the queue's (see
-- join). Returns the new owner, fence and pttl, or nil. A release's
-- common case writes free, grant, pop and take out (handover.lua); the
-- fast-path test keeps the two equal.
local function grant(channel, self, nowus, window, prev, life, near)
  local nowms = math.floor(nowus / 1000)
  local w, ttl, sid, label = pop(nowms)
  if not w then return nil end
  local px = ttl
  if w ~= self and sid ~= near then px = math.min(ttl, window) end
  local f = take(w, px, life, nowus, label, prev, sid)
  if sid ~= near and (w ~= self or redis.call('EXISTS', k_queue) == 1) then
    redis.call('PUBLISH', channel, w .. ' ' .. fmt(f) .. ' ' .. nowms .. ' ' .. px)
  end
  return w, f, px
end

-- lapse runs when the lock l is found free (its lease over) while waiters
-- are queued. If its holder came from the queue, the grant lapsed (a
-- release or a keep would have rewritten the value): its subscriber is cut
-- off (cut_off in common.lua).
local function lapse(l, channel, nowus)
  if l.from ~= NOT_QUEUED then cut_off(channel, l.from, nowus) end
end

-- free runs when the last hold of l went, its key deleted, with waiters
-- maybe queued (queue set). handoff 'g' hands it to the queue's head and
-- returns (owner, fence, server_ms, pttl_ms) of the hand-over, told to
-- every process but near's (nil: none; see grant); 'n'
-- (Redlock, whose masters must not pick a holder each on their own)
-- publishes the free notice "-" when live waiters are queued, and they try
-- again: the lock key comes back for them as a lease that is over, so
-- that the queue keeps its place (see value.lua). The hand-over's token is
-- larger than the freed lock's.
local function free(l, handoff, window, nowus, near)
  local nowms = math.floor(nowus / 1000)
  if handoff == 'n' then
    if live(nowms) then
      l.ends = nowms
      put(l)
      redis.call('PUBLISH', chan(), '-')
    end
    return nil
  end
  local w, f, px = grant(chan(), nil, nowus, window, l.fence, l.queue, near)
  return w, f, nowms, px
end
-- keep: drop one hold; the last keeps the lock for keep_ms more instead of
-- freeing it (keep after the handler: a resubmit within the window finds
-- the lock busy). The owner token stays, but its holder is done: nobody
-- renews or releases it, and the lock ends by itself. Arguments: a_token,
-- a_keep_ms.
-- Reply: holds left (>= 0), or -1 when the caller does not hold the lock
-- (nothing is touched then).
local keepms = tonumber(a_keep_ms)
local v = redis.call('GET', k_lock)
if not v then return -1 end
local l = parse(v)
if l.owner ~= a_token then return -1 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return -1 end
if l.holds > 1 then
  l.holds = l.holds - 1
  put(l)
  return l.holds
end
l.ends = nowms + keepms
if l.queue ~= 0 then
  -- Released as far as the queue is concerned: not a grant any more (or
  -- the lock's end would read as a lapsed grant), and waiters learn when
  -- the kept lock ends, so they re-check then.
  l.from = NOT_QUEUED
  put(l)
  redis.call('PUBLISH', chan(), l.owner .. ' ' .. fmt(l.fence) .. ' ' .. nowms .. ' ' .. keepms)
  return 0
end
put(l)
return 0
