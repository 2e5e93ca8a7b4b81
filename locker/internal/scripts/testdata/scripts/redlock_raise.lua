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
-- raise: lift the fencing token of a lock the caller holds to at least
-- ARGV[2] (Redlock writes the token it settled on back to the masters
-- that granted it: it stays in the lock's value, which a release keeps
-- in KEYS[4], see gone in value.lua). ARGV: token, fence. Reply: 1.
local v = redis.call('GET', KEYS[1])
if not v then return 1 end
local o, f, n, w, rest = parse(v)
if o == ARGV[1] and tonumber(f) < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], o .. ' ' .. ARGV[2] .. ' ' .. n .. ' ' .. w .. rest, 'KEEPTTL')
end
return 1
