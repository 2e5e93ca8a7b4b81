-- acquire, the common case (arguments: see acquire.lua, which follows
-- common.lua): a free lock that nobody queues for, taken with a new token.
-- It replies with the fence alone before common.lua's helpers are defined
-- (see value.lua). One EXISTS tells free and unqueued at once, where GET
-- and then EXISTS on the queue took two; a busy first try pays one more.
if ARGV[4] == 'a' and redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  return take(ARGV[1], ARGV[2], '0', nil, ARGV[7])
end
