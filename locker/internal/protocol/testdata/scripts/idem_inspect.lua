-- idem_inspect: its keys and arguments by name (Layouts, layout.go).
local k_record, k_waiters = KEYS[1], KEYS[2]
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
-- idem_inspect: a read-only view of one idempotency record, for operators.
-- It runs after fence.lua, for refuse; it writes nothing.
-- k_record, k_waiters (see idem_begin.lua).
-- Reply: nil when there is no record; else {state ('p' in flight, 'd'
-- done), the fingerprint (64 hex digits), the record's PTTL in ms, the
-- waiting callers, the owner token ('' when done)}. Waiting callers are
-- the tokens in k_waiters while the record is in flight (a done record is
-- replayed at once: nobody waits for it), counted from SMEMBERS, which
-- the other scripts call already. A done record's outcome is not
-- returned.
local v = redis.call('GET', k_record)
if not v then
  return nil
end
-- A record of another protocol (it begins with '@') or one no protocol
-- wrote is refused as idem_begin.lua refuses it: "LOCKTAG_PROTOCOL found
-- 1", nothing written.
if string.byte(v) ~= 112 and string.byte(v) ~= 100 then
  refuse(string.match(v, '^@(%d+)') or 'unknown')
end
local waiting, owner = 0, ''
if string.byte(v) == 112 then
  waiting = #redis.call('SMEMBERS', k_waiters)
  owner = string.sub(v, 67)
end
return {string.sub(v, 1, 1), string.sub(v, 3, 66), redis.call('PTTL', k_record), waiting, owner}
