-- multi_acquire: its keys and arguments by name (Layouts, layout.go).
local k_count = #KEYS / 2
local function k_lock(i) return KEYS[2 * i - 1] end
local function k_queue(i) return KEYS[2 * i] end
local a_ttl_ms = ARGV[1]
local function a_tokens(i) return ARGV[1 + i] end
local a_label = ARGV[k_count + 2]
-- multi_acquire: take the mutexes of several keys at once, all or none:
-- every lock must be free with nobody queued for it (a queued waiter comes
-- first: the caller then takes the keys one by one, in order, through the
-- queues). Only on a deployment where every key is on one node and
-- scripts may span slots (a single server, Sentinel); see single/multi.go.
-- Keys, per lock i (from 1 to k_count): k_lock(i), k_queue(i) — the
-- layout of value.lua and common.lua.
-- Arguments: a_ttl_ms, then one owner token per lock (a_tokens(i)), then
-- optionally the holders' label a_label (see acquire.lua).
-- Reply: 0 when some lock is held or has waiters (nothing was written),
-- else the array of the fencing tokens minted, in the keys' order.
-- The values are written as take in value.lua writes them ("owner fence
-- holds queue granted ends from[ label]"), so every other script reads
-- these locks as its own, each with one SET NX as acquire_free.lua (its
-- GET the value of a key that is there: another protocol's is refused,
-- refuse in fence.lua, with the keys this call took deleted again): a lock
-- key exists whenever anyone is queued for the lock, so SET NX takes a
-- lock that is free with nobody queued; on the first that is not, the
-- keys this call took are deleted again. A free lock has no earlier token
-- at hand: each gets the server clock in microseconds (mint in fence.lua);
-- tokens are per key, so the keys may share it.
local ttl = tonumber(a_ttl_ms)
local t = redis.call('TIME')
local us = string.sub('00000' .. t[2], -6)
local f = tonumber(t[1] .. us)
local ms = t[1] .. string.sub(us, 1, 3)
local ends = string.format('%d', tonumber(ms) + ttl)
local tail = ' ' .. t[1] .. us .. ' 1 0 ' .. ms .. ' ' .. ends .. ' -'
if a_label and a_label ~= '' then tail = tail .. ' ' .. a_label end
local fences, taken = {}, {}
for i = 1, k_count do
  local key = k_lock(i)
  local found = redis.call('SET', key, a_tokens(i) .. tail, 'NX', 'PXAT', ends, 'GET')
  if found then
    if #taken > 0 then redis.call('DEL', unpack(taken)) end
    if string.byte(found) == 64 then
      -- Another protocol's lock (refuse in fence.lua), refused with
      -- nothing left written.
      error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(found, '^@(%d+)') or 'unknown') .. ' 1'})
    end
    return 0
  end
  taken[i] = key
  fences[i] = f
end
return fences
