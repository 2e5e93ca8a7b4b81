-- rw_acquire_idle: rw_acquire.lua's common case, a new token ('a') on an
-- idle read/write lock, run first in the script, ahead of the shared
-- functions, for the reason sem_acquire_idle.lua gives. It does what
-- rw_take (rw_kind.lua) does, written out: a writer mints a fencing token
-- (mint in value.lua: one more than the last writer's, kept in the
-- details hash, else the server clock in microseconds) and its hash
-- fields go in one HSET; a reader gets the current token, the last
-- writer's (F), which the details hash keeps for a while after the lock
-- went idle (rw_idle.lua), or one minted for it when there is none. ARGV
-- and reply as rw_acquire.lua's (the fence alone).
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  local token, ttl, kind, label = ARGV[1], tonumber(ARGV[2]), ARGV[7], ARGV[8]
  local t = redis.call('TIME')
  local us = string.sub('00000' .. t[2], -6) -- see sem_acquire_idle.lua
  local ms = t[1] .. string.sub(us, 1, 3)
  local f = redis.call('HGET', KEYS[3], 'F')
  if kind == 'w' and f then
    f = string.format('%d', tonumber(f) + 1)
  elseif not f then
    f = t[1] .. us
  end
  local h = f .. ' 1 ' .. ms
  if label and label ~= '' then h = h .. ' ' .. label end
  redis.call('ZADD', KEYS[1], string.format('%d', tonumber(ms) + ttl), token)
  if kind == 'w' then
    redis.call('HSET', KEYS[3], '=' .. token, h, 'F', f, 'W', token)
  else
    redis.call('HSET', KEYS[3], '=' .. token, h, 'F', f)
  end
  local life = string.format('%d', ttl + 1000)
  redis.call('PEXPIRE', KEYS[1], life)
  redis.call('PEXPIRE', KEYS[3], life)
  return tonumber(f)
end
