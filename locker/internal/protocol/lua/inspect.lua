-- inspect: a read-only view of one lock name, for operators. Writes
-- nothing. The name's first kind that exists (held or with waiters) is
-- shown: mutex, else semaphore, else read/write.
-- Keys: the mutex's k_lock, k_queue (and k_unused); the semaphore's
-- k_sem_holders, k_sem_queue, k_sem_records; the read/write lock's
-- k_rw_holders, k_rw_queue, k_rw_records (all in the name's hash slot).
-- Arguments: a_max, the most waiters to return.
-- Reply: {server seconds, server microseconds, kind ('' none, 'mutex',
-- 'semaphore', 'read/write'), limit (a semaphore's, when known; else 0),
-- holder count, then per holder: token, "fence holds[ granted[ label]]",
-- lease left ms, mode ('', 'read', 'write'); queue length, then per waiter
-- in queue order: token, arrival (server microseconds, as ZRANGE gives
-- it), details or '', mode ('' or its read/write kind 'r' | 'w')}.
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(a_max)
local out = {t[1], t[2]}

-- waiters lists queue q's first waiters: each entry "token wait_ms ttl_ms
-- sid[ label]" (common.lua) as token, arrival and its details
-- "deadline_ms ttl_ms sid[ label]" (deadline: arrival's ms + wait); a
-- read/write lock's records hash d has each waiter's kind.
local function waiters(q, d, rw)
  out[#out + 1] = redis.call('ZCARD', q)
  local w = redis.call('ZRANGE', q, 0, max - 1, 'WITHSCORES')
  for i = 1, #w, 2 do
    local tok, wait, rest = string.match(w[i], '^(%S+) (%d+) (.*)$')
    local details = ''
    if tok then
      details = string.format('%.0f', math.floor(tonumber(w[i + 1]) / 1000) + tonumber(wait)) .. ' ' .. rest
    else
      tok = w[i]
    end
    out[#out + 1] = tok
    out[#out + 1] = w[i + 1]
    out[#out + 1] = details
    if rw then
      out[#out + 1] = redis.call('HGET', d, '~' .. tok) or 'r'
    else
      out[#out + 1] = ''
    end
  end
end

-- A mutex's value: "owner fence holds queue granted ends from[ label]"
-- (value.lua); a lease that is over, kept for the queue's sake, holds
-- nothing.
-- A record of another protocol is refused, as the other scripts refuse
-- it (refuse in value.lua; sem_purge in sem_common.lua).
local function refuse(found)
  error({err = 'LOCKTAG_PROTOCOL ' .. found .. ' 1'})
end
for _, k in ipairs({k_sem_holders, k_rw_holders}) do
  local m = redis.call('ZSCORE', k, '@')
  if m then refuse(m) end
end
local v = redis.call('GET', k_lock)
local o, f, n, q, g, e, label
if v then
  if string.byte(v) ~= 64 then
    o, f, n, q, g, e, label = string.match(v, '^(%S+) (%d+) (%d+) (%d+) (%d+) (%d+) %S+ ?(.*)$')
  end
  if not o then refuse(string.match(v, '^@(%d+)') or 'unknown') end
  if o and q ~= '0' and tonumber(e) <= nowms then o = nil end
end
if o or redis.call('EXISTS', k_queue) == 1 then
  out[#out + 1] = 'mutex'
  out[#out + 1] = 0
  if o then
    out[#out + 1] = 1
    out[#out + 1] = o
    local about = f .. ' ' .. n .. ' ' .. g
    if label ~= '' then about = about .. ' ' .. label end
    out[#out + 1] = about
    out[#out + 1] = tonumber(e) - nowms
    out[#out + 1] = ''
  else
    out[#out + 1] = 0
  end
  waiters(k_queue, k_unused, false)
  return out
end

for _, k in ipairs({{k_sem_holders, k_sem_queue, k_sem_records, 'semaphore'},
    {k_rw_holders, k_rw_queue, k_rw_records, 'read/write'}}) do
  local p, q, d = k[1], k[2], k[3]
  if redis.call('EXISTS', p, q) > 0 then
    local rw = k[4] == 'read/write'
    out[#out + 1] = k[4]
    out[#out + 1] = 0
    if not rw then out[#out] = tonumber(redis.call('HGET', d, '#') or '0') end
    local writer = rw and redis.call('HGET', d, 'W') or nil
    local hs = redis.call('ZRANGEBYSCORE', p, '(' .. nowms, '+inf', 'WITHSCORES')
    local at = #out + 1
    out[at] = 0
    for i = 1, #hs, 2 do
      local info = redis.call('HGET', d, '=' .. hs[i])
      if info then
        out[at] = out[at] + 1
        out[#out + 1] = hs[i]
        out[#out + 1] = info
        out[#out + 1] = tonumber(hs[i + 1]) - nowms
        if not rw then
          out[#out + 1] = ''
        elseif hs[i] == writer then
          out[#out + 1] = 'write'
        else
          out[#out + 1] = 'read'
        end
      end
    end
    waiters(q, d, rw)
    return out
  end
end

out[#out + 1] = ''
out[#out + 1] = 0
out[#out + 1] = 0
out[#out + 1] = 0
return out
