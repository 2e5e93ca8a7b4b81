-- sem_pttl: remaining lease of a permit the caller holds. Arguments:
-- a_token.
-- Reply: milliseconds left, or -1 when not held.
local nowms = now_ms(redis.call('TIME'))
local s = redis.call('ZSCORE', k_holders, a_token)
if not s or tonumber(s) <= nowms then
  -- Not held; a lock of another protocol is refused (sem_purge).
  local m = redis.call('ZSCORE', k_holders, '@')
  if m then refuse(m) end
  return -1
end
return tonumber(s) - nowms
