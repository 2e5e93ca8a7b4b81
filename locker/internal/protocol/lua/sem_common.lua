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
