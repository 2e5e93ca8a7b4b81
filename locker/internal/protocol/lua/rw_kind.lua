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
