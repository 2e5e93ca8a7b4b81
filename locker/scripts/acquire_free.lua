-- acquire, the common case (arguments: see acquire.lua, which follows
-- common.lua): a free lock that nobody queues for, taken with a new token.
-- It replies with the fence alone before common.lua's helpers are defined
-- (see value.lua). One EXISTS tells free and unqueued at once, where GET
-- and then EXISTS on the queue took two; a busy first try pays one more.
-- It is take (value.lua) written out: one TIME gives the token (mint: no
-- earlier token is at hand for a lock that is not there) and the grant
-- time, both made as text from TIME's fields (server microseconds, and
-- their first digits, ms), without Lua's float printing.
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  if KEYS[4] then
    -- Redlock: the token of the last holder, kept on this master (gone).
    return take(ARGV[1], ARGV[2], '0', now_us(redis.call('TIME')), ARGV[7], last())
  end
  local t = redis.call('TIME')
  local us = string.sub('00000' .. t[2], -6)
  local v = ARGV[1] .. ' ' .. t[1] .. us .. ' 1 0 ' .. t[1] .. string.sub(us, 1, 3)
  local label = ARGV[7]
  if label and label ~= '' then v = v .. ' ' .. label end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
  return tonumber(t[1] .. us)
end
