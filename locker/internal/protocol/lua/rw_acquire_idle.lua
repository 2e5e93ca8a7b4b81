-- rw_acquire_idle: rw_acquire.lua's common case, a new token ('a') on an
-- idle read/write lock, run first in the script, ahead of the shared
-- functions, for the reason sem_acquire_idle.lua gives. It does what
-- rw_take (rw_kind.lua) does, written out: a writer mints a fencing token
-- (mint in fence.lua: one more than the last writer's, kept in the
-- details hash, else the server clock in microseconds) and its hash
-- fields go in one HSET; a reader gets the current token, the last
-- writer's (F), which the details hash keeps for a while after the lock
-- went idle (rw_idle.lua), or one minted for it when there is none.
-- Arguments and reply as rw_acquire.lua's (the fence alone).
if a_mode == 'a' and redis.call('EXISTS', k_holders, k_queue) == 0 then
  local ttl = tonumber(a_ttl_ms)
  local t = redis.call('TIME')
  local us = string.sub('00000' .. t[2], -6) -- see sem_acquire_idle.lua
  local ms = t[1] .. string.sub(us, 1, 3)
  local f = redis.call('HGET', k_records, 'F')
  if a_kind == 'w' and f then
    f = string.format('%d', tonumber(f) + 1)
  elseif not f then
    f = t[1] .. us
  end
  local h = f .. ' 1 ' .. ms
  if a_label and a_label ~= '' then h = h .. ' ' .. a_label end
  redis.call('ZADD', k_holders, string.format('%d', tonumber(ms) + ttl), a_token)
  if a_kind == 'w' then
    redis.call('HSET', k_records, '=' .. a_token, h, 'F', f, 'W', a_token)
  else
    redis.call('HSET', k_records, '=' .. a_token, h, 'F', f)
  end
  local life = string.format('%d', ttl + 1000)
  redis.call('PEXPIRE', k_holders, life)
  redis.call('PEXPIRE', k_records, life)
  return tonumber(f)
end
