-- idem_end: its keys and arguments by name (Layouts, layout.go).
local k_record, k_waiters = KEYS[1], KEYS[2]
local a_token, a_mode, a_outcome, a_ttl_ms, a_channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
-- idem_end: the owner of an in-flight record completes it (stores the
-- outcome for the TTL) or abandons it (deletes it), and wakes the waiters.
-- Keys as idem_begin.lua's. Arguments: a_token, a_mode ('c' complete | 'a'
-- abandon), a_outcome, a_ttl_ms, a_channel. Waiters get "token 0 0" each
-- on the channel.
-- Reply: 1 done; 0 the record is not in flight under token (expired, taken
-- over, or ended before): nothing is touched.
local v = redis.call('GET', k_record)
-- A record of another protocol (it begins with '@') or one no protocol
-- wrote is refused: "LOCKTAG_PROTOCOL found 1", nothing written (see
-- refuse in fence.lua).
if v and string.byte(v) ~= 112 and string.byte(v) ~= 100 then
  error({err = 'LOCKTAG_PROTOCOL ' .. (string.match(v, '^@(%d+)') or 'unknown') .. ' 1'})
end
if not v or string.sub(v, 1, 1) ~= 'p' or string.sub(v, 67) ~= a_token then
  return 0
end
if a_mode == 'c' then
  redis.call('SET', k_record, 'd0' .. string.sub(v, 3, 66) .. a_outcome, 'PX', a_ttl_ms)
else
  redis.call('DEL', k_record)
end
if string.sub(v, 2, 2) == '1' then
  for _, w in ipairs(redis.call('SMEMBERS', k_waiters)) do
    redis.call('PUBLISH', a_channel, w .. ' 0 0')
  end
  redis.call('DEL', k_waiters)
end
return 1
