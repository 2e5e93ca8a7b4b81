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
