-- multi_acquire: take the mutexes of several keys at once, all or none:
-- every lock must be free with nobody queued for it (a queued waiter comes
-- first: the caller then takes the keys one by one, in order, through the
-- queues). Only on a deployment where every key is on one node and
-- scripts may span slots (a single server, Sentinel); see multi_fast.go.
-- KEYS, per lock i (from 0): [3i+1] lock, [3i+2] fencing counter,
-- [3i+3] waiter queue — the layout of value.lua and common.lua.
-- ARGV: ttl_ms, then one owner token per lock, then optionally the
-- holders' label (see acquire.lua).
-- Reply: 0 when some lock is held or has waiters (nothing was written),
-- else the array of the fencing tokens minted, in KEYS order.
-- The value and the fencing counter are written as take and mint in
-- value.lua write them ("owner fence holds waiting granted[ label]"; a
-- counter seeded
-- from the server clock in microseconds, expiring after an hour), so
-- every other script reads these locks as its own.
local ttl = tonumber(ARGV[1])
local n = #KEYS / 3
local label = ARGV[n + 2]
for i = 0, n - 1 do
  if redis.call('EXISTS', KEYS[3 * i + 1], KEYS[3 * i + 3]) > 0 then
    return 0
  end
end
local fences = {}
local t = redis.call('TIME')
local granted = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local tail = ' 1 0 ' .. granted
if label and label ~= '' then tail = tail .. ' ' .. label end
for i = 0, n - 1 do
  local fk = KEYS[3 * i + 2]
  local f = redis.call('INCR', fk)
  if f == 1 then
    f = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', fk, string.format('%.0f', f), 'PX', 3600000)
  end
  redis.call('SET', KEYS[3 * i + 1], ARGV[i + 2] .. ' ' .. string.format('%.0f', f) .. tail, 'PX', ttl)
  fences[i + 1] = f
end
return fences
