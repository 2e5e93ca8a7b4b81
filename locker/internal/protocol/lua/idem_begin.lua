-- idem_begin: claim an idempotency record, or report what it holds.
-- k_record: a string made of the state ('p' in flight, 'd' done), a
--         waiters flag ('1' when k_waiters may hold waiters, else '0'), the
--         64-hex-digit fingerprint, then the owner token (in flight) or the
--         stored outcome (done). In flight it expires with the lease, done
--         with the record TTL.
-- k_waiters: set of the tokens of callers waiting for this record.
-- Arguments: a_fingerprint, a_token, a_lease_ms, a_wait_ms (0 = do not
-- register).
-- Reply: {1} claimed by token; {2, pttl_ms} in flight; {3} the record holds
-- another fingerprint; {4, record} done (the caller slices the outcome).
-- Claim and replay cost two and one redis.call.
local wait = tonumber(a_wait_ms)
local v = redis.call('GET', k_record)
-- A record of another protocol (it begins with '@') or one no protocol
-- wrote is refused: "LOCKTAG_PROTOCOL found 1", nothing written (see
-- refuse in fence.lua).
if v and string.byte(v) ~= 112 and string.byte(v) ~= 100 then
  error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(v, '^@(%d+)') or 'unknown') .. ' 1'})
end
if not v then
  redis.call('SET', k_record, 'p0' .. a_fingerprint .. a_token, 'PX', a_lease_ms)
  return {1}
end
if string.sub(v, 3, 66) ~= a_fingerprint then return {3} end
if string.sub(v, 1, 1) == 'd' then return {4, v} end
if wait > 0 then
  redis.call('SADD', k_waiters, a_token)
  local keep = wait + 1000
  if redis.call('PTTL', k_waiters) < keep then
    redis.call('PEXPIRE', k_waiters, keep)
  end
  if string.sub(v, 2, 2) ~= '1' then
    redis.call('SET', k_record, 'p1' .. string.sub(v, 3), 'KEEPTTL')
  end
end
return {2, redis.call('PTTL', k_record)}
