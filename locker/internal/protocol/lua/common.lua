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
