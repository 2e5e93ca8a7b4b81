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
