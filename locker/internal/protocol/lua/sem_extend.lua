-- sem_extend: reset the lease of a permit the caller holds. Arguments:
-- a_token, a_ttl_ms. Reply: 1 extended, 0 not held.
local ttl = tonumber(a_ttl_ms)
local nowms = now_ms(redis.call('TIME'))
local s = redis.call('ZSCORE', k_holders, a_token)
if not s or tonumber(s) <= nowms then
  -- Not held; a lock of another protocol is refused (sem_purge).
  local m = redis.call('ZSCORE', k_holders, '@')
  if m then refuse(m) end
  return 0
end
redis.call('ZADD', k_holders, 'XX', fmt(nowms + ttl), a_token)
keep(k_holders, ttl + 1000)
keep(k_records, ttl + 1000)
return 1
