-- sem_force: free every holder of a semaphore or a read/write lock (after
-- the kind's file: hand_on), as if each had released: free permits go to
-- the queue's head, the fencing counter is left alone. Arguments as
-- force.lua's.
-- The holders' Lockers are told "token,token... reason" on the control
-- channel. Reply: {} when nobody holds (nothing is touched), else the
-- writer's token ('' none), then per holder: token, "fence holds[ granted[
-- label]]".
local window = tonumber(a_window_ms)
local nowms = now_ms(redis.call('TIME'))
sem_purge(nowms)
local hs = redis.call('ZRANGE', k_holders, 0, -1)
if #hs == 0 then return {} end
local out = {redis.call('HGET', k_records, 'W') or ''}
for _, t in ipairs(hs) do
  out[#out + 1] = t
  out[#out + 1] = redis.call('HGET', k_records, '=' .. t) or '0 0'
  redis.call('HDEL', k_records, '=' .. t, '?' .. t)
end
redis.call('DEL', k_holders)
redis.call('HDEL', k_records, 'W')
redis.call('PUBLISH', a_channel, table.concat(hs, ',') .. ' ' .. a_reason)
if redis.call('EXISTS', k_queue) == 1 then
  hand_on(nowms, window)
end
return out
