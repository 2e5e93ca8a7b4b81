-- sem_extend: reset the lease of a permit the caller holds. ARGV: token,
-- ttl_ms. Reply: 1 extended, 0 not held.
local token, ttl = ARGV[1], tonumber(ARGV[2])
local nowms = now_ms(redis.call('TIME'))
local s = redis.call('ZSCORE', KEYS[1], token)
if not s or tonumber(s) <= nowms then
  -- Not held; a lock of another protocol is refused (sem_purge).
  local m = redis.call('ZSCORE', KEYS[1], '@')
  if m then refuse(m) end
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', fmt(nowms + ttl), token)
keep(KEYS[1], ttl + 1000)
keep(KEYS[3], ttl + 1000)
return 1
