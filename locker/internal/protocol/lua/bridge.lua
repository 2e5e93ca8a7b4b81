-- A mutex bridged to a plain lock (locker.WithPlainLockBridge), after
-- the mutex's shared functions: k_plain is the key other libraries
-- lock the same name with (SET name token NX PX ttl, released by
-- compare-and-delete: redsync, bsm/redislock, a seed's SET NX). While a
-- locktag holder holds the mutex, k_plain holds its token and expires
-- when its lease ends (a mirror), so the plain lockers find the name
-- taken; while a plain locker holds k_plain (any other value), locktag
-- does not take the mutex. The operation itself (the mutex's own script,
-- unchanged) runs as body between this file and bridge_post.lua, which
-- writes the mirror again from the mutex's value afterwards.
-- plain is k_plain's value before the call; foreign says a plain locker
-- holds it (it is not the mirror of the mutex's owner).
local plain = redis.call('GET', k_plain)
local foreign = false
if plain then
  local before = redis.call('GET', k_lock)
  foreign = plain ~= (before and string.match(before, '^(%S+)'))
end
