-- idem_end: the owner of an in-flight record completes it (stores the
-- outcome for the TTL) or abandons it (deletes it), and wakes the waiters.
-- KEYS as idem_begin.lua. ARGV: token, mode ('c' complete | 'a' abandon),
-- outcome, ttl_ms, channel. Waiters get "token 0 0" each on the channel.
-- Reply: 1 done; 0 the record is not in flight under token (expired, taken
-- over, or ended before): nothing is touched.
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
if ARGV[2] == 'c' then
  redis.call('SET', KEYS[1], 'd0' .. string.sub(v, 3, 66) .. ARGV[3], 'PX', ARGV[4])
else
  redis.call('DEL', KEYS[1])
end
if string.sub(v, 2, 2) == '1' then
  for _, w in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    redis.call('PUBLISH', ARGV[5], w .. ' 0 0')
  end
  redis.call('DEL', KEYS[2])
end
return 1
