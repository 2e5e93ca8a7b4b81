-- rw_acquire_idle: rw_acquire.lua's common case, a new token ('a') on an
-- idle read/write lock, run first in the script, ahead of the shared
-- functions, for the reason sem_acquire_idle.lua gives. It does what
-- rw_take (rw_kind.lua) does, written out: a writer mints a fencing token
-- (mint in value.lua) and its two hash fields go in one HSET; a reader
-- gets the current token. ARGV and reply as rw_acquire.lua's (the fence
-- alone).
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  local token, ttl, kind, label = ARGV[1], tonumber(ARGV[2]), ARGV[7], ARGV[8]
  local t = redis.call('TIME')
  local ms = t[1] .. string.sub(string.sub('00000' .. t[2], -6), 1, 3) -- see sem_acquire_idle.lua
  local f
  if kind == 'w' then
    f = redis.call('INCR', KEYS[2])
    if f == 1 then
      f = tonumber(t[1]) * 1000000 + tonumber(t[2])
      redis.call('SET', KEYS[2], string.format('%d', f), 'PX', 3600000)
    end
  else
    f = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
  local h = string.format('%d 1 ', f) .. ms
  if label and label ~= '' then h = h .. ' ' .. label end
  redis.call('ZADD', KEYS[1], string.format('%d', tonumber(ms) + ttl), token)
  if kind == 'w' then
    redis.call('HSET', KEYS[4], '=' .. token, h, 'W', token)
  else
    redis.call('HSET', KEYS[4], '=' .. token, h)
  end
  local life = string.format('%d', ttl + 1000)
  redis.call('PEXPIRE', KEYS[1], life)
  redis.call('PEXPIRE', KEYS[4], life)
  return f
end
