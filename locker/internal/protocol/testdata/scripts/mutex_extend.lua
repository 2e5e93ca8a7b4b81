-- mutex_extend: its keys and arguments by name (Layouts, layout.go).
local k_lock = KEYS[1]
local a_token, a_ttl_ms = ARGV[1], ARGV[2]
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
-- extend: reset the lease of a lock the caller holds to ttl_ms from now
-- (the value's ends with it, see value.lua). Arguments: a_token, a_ttl_ms.
-- Reply: the server's clock in ms (extended: the caller checks it against
-- its own, see backend.Clock), 0 not held.
local v = redis.call('GET', k_lock)
if not v then return 0 end
local l = parse(v)
if l.owner ~= a_token then return 0 end
local nowms = now_ms(redis.call('TIME'))
if not held(l, nowms) then return 0 end
l.ends = nowms + tonumber(a_ttl_ms)
put(l)
return nowms
