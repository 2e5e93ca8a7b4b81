-- sem_force: free every holder of a semaphore or a read/write lock (after
-- the kind's file: hand_on), as if each had released: free permits go to
-- the queue's head, the fencing counter is left alone. ARGV as force.lua's.
-- The holders' Lockers are told "token,token... reason" on the control
-- channel. Reply: {} when nobody holds (nothing is touched), else the
-- writer's token ('' none), then per holder: token, "fence holds[ granted[
-- label]]".
local window = tonumber(ARGV[4])
local nowms = now_ms(redis.call('TIME'))
sem_purge(nowms)
local hs = redis.call('ZRANGE', KEYS[1], 0, -1)
if #hs == 0 then return {} end
local out = {redis.call('HGET', KEYS[3], 'W') or ''}
for _, t in ipairs(hs) do
  out[#out + 1] = t
  out[#out + 1] = redis.call('HGET', KEYS[3], '=' .. t) or '0 0'
  redis.call('HDEL', KEYS[3], '=' .. t, '?' .. t)
end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[3], 'W')
redis.call('PUBLISH', ARGV[1], table.concat(hs, ',') .. ' ' .. ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then
  hand_on(nowms, window)
end
return out
