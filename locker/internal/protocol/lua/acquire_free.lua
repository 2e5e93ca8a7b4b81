-- acquire, the common case (arguments: see acquire.lua, which follows
-- the shared functions): a free lock taken with a new token. It runs
-- first and replies with the fence alone before any helper is defined
-- (each definition makes a closure on every call, and the helpers are a
-- large part of the free lock's acquire and release: docs/benchmarks.md).
-- A lock key exists whenever anyone is queued for the lock (see
-- value.lua), so one SET NX takes a lock that is free with nobody queued;
-- on a busy lock, its GET option hands acquire.lua the value (found) and
-- TIME's reply (clock) goes on too.
-- It is take and mint (value.lua, fence.lua) written out: one TIME gives
-- the token (no earlier token is at hand for a lock that is not there,
-- but on Redlock the one a release left), the grant time and the lease's
-- end, made as text from TIME's fields (server microseconds, and their
-- first digits, ms), without Lua's float printing and with as few strings
-- made as the value allows (each is hashed and interned). Redlock's
-- waiting mode 'n' takes it too: with no lock key nobody is queued, so
-- there is no entry of its own to drop (acquire.lua). clock_us and
-- clock_ms are the clock as those strings, for acquire_busy.lua.
local clock, found, clock_us, clock_ms
if (a_mode == 'a' or a_mode == 'n') then
  clock = redis.call('TIME')
  local sec, us = clock[1], clock[2]
  if #us < 6 then us = string.sub('00000' .. us, -6) end
  clock_us = sec .. us
  clock_ms = string.sub(clock_us, 1, #sec + 3)
  local f, ms = clock_us, clock_ms
  if k_last then
    -- Redlock: one more than the last holder's token this master keeps
    -- (gone and last in last.lua).
    local kept = redis.call('GET', k_last)
    if kept and string.byte(kept) == 64 then
      -- Another protocol's (refuse in fence.lua, written out).
      error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(kept, '^@(%d+)') or 'unknown') .. ' 1'})
    end
    kept = kept and tonumber(string.match(kept, '^%S+ (%d+)'))
    if kept and kept > 0 then f = string.format('%.0f', kept + 1) end
  end
  -- ms + a_ttl_ms: Lua converts the two numerals as tonumber would.
  local ends = string.format('%d', ms + a_ttl_ms)
  local v
  if a_label and a_label ~= '' then
    v = a_token .. ' ' .. f .. ' 1 0 ' .. ms .. ' ' .. ends .. ' - ' .. a_label
  else
    v = a_token .. ' ' .. f .. ' 1 0 ' .. ms .. ' ' .. ends .. ' -'
  end
  found = redis.call('SET', k_lock, v, 'NX', 'PXAT', ends, 'GET')
  if not found then return tonumber(f) end
end
