-- idem_renew: reset the lease of an in-flight record the caller owns.
-- KEYS[1] record (see idem_begin.lua). ARGV: token, lease_ms.
-- Reply: 1 renewed, 0 not in flight under token.
local v = redis.call('GET', KEYS[1])
-- A record of another protocol (it begins with '@') or one no protocol
-- wrote is refused: "LOCKTAG_PROTOCOL found 1", nothing written (see
-- refuse in value.lua).
if v and string.byte(v) ~= 112 and string.byte(v) ~= 100 then
  error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(v, '^@(%d+)') or 'unknown') .. ' 1'})
end
if not v or string.sub(v, 1, 1) ~= 'p' or string.sub(v, 67) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
