-- rw_acquire_idle: rw_acquire.lua's common case, a new token ('a') on an
-- idle read/write lock, run first in the script, ahead of the shared
-- functions, for the reason sem_acquire_idle.lua gives. It does what
-- rw_take (rw_kind.lua) does, written out: a writer mints a fencing token
-- (mint in common.lua) and its two hash fields go in one HSET; a reader
-- gets the current token. ARGV and reply as rw_acquire.lua's (the fence
-- alone).
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  local token, ttl, kind, label = ARGV[1], tonumber(ARGV[2]), ARGV[7], ARGV[8]
  local t = redis.call('TIME')
  local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local f
  if kind == 'w' then
    f = redis.call('INCR', KEYS[2])
    if f == 1 then
      f = tonumber(t[1]) * 1000000 + tonumber(t[2])
      redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', 3600000)
    end
  else
    f = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
  local h = string.format('%.0f 1 %.0f', f, nowms)
  if label and label ~= '' then h = h .. ' ' .. label end
  redis.call('ZADD', KEYS[1], string.format('%.0f', nowms + ttl), token)
  if kind == 'w' then
    redis.call('HSET', KEYS[4], '=' .. token, h, 'W', token)
  else
    redis.call('HSET', KEYS[4], '=' .. token, h)
  end
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
  redis.call('PEXPIRE', KEYS[4], ttl + 1000)
  return f
end
