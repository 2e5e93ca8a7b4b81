-- After a bridged mutex's operation (body, see bridge.lua): the mirror
-- follows the mutex's value. A held mutex writes its owner's token to
-- k_plain, expiring with its lease; a mutex nobody holds any more drops
-- its mirror. A plain locker's value is never touched.
local reply = body()
if not foreign then
  local v = redis.call('GET', k_lock)
  local l = v and parse(v)
  if l and held(l, now_ms(redis.call('TIME'))) then
    redis.call('SET', k_plain, l.owner, 'PXAT', fmt(l.ends))
  elseif plain then
    redis.call('DEL', k_plain)
  end
end
return reply
