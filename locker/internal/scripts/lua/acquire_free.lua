-- acquire, the common case (arguments: see acquire.lua, which follows
-- value.lua and common.lua): a free lock that nobody queues for, taken
-- with a new token. It runs first and replies with the fence alone before
-- any helper is defined (each definition makes a closure on every call,
-- and value.lua's and common.lua's are a large part of the free lock's
-- acquire and release: docs/benchmarks.md). One EXISTS tells free and
-- unqueued at once, where GET and then EXISTS on the queue took two; a busy
-- first try pays one more.
-- It is take and mint (value.lua) written out: one TIME gives the token
-- (no earlier token is at hand for a lock that is not there, but on
-- Redlock the one a release left) and the grant time, both made as text
-- from TIME's fields (server microseconds, and their first digits, ms),
-- without Lua's float printing.
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  local t = redis.call('TIME')
  local us = string.sub('00000' .. t[2], -6)
  local f = t[1] .. us
  if KEYS[4] then
    -- Redlock: one more than the last holder's token this master keeps
    -- (gone and last in value.lua).
    local kept = redis.call('GET', KEYS[4])
    kept = kept and tonumber(string.match(kept, '^%S+ (%d+)'))
    if kept and kept > 0 then f = string.format('%.0f', kept + 1) end
  end
  local v = ARGV[1] .. ' ' .. f .. ' 1 0 ' .. t[1] .. string.sub(us, 1, 3)
  local label = ARGV[7]
  if label and label ~= '' then v = v .. ' ' .. label end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
  return tonumber(f)
end
