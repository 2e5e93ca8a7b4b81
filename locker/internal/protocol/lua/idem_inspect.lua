-- idem_inspect: a read-only view of one idempotency record, for operators.
-- It runs after fence.lua, for refuse; it writes nothing.
-- k_record, k_waiters (see idem_begin.lua).
-- Reply: nil when there is no record; else {state ('p' in flight, 'd'
-- done), the fingerprint (64 hex digits), the record's PTTL in ms, the
-- waiting callers, the owner token ('' when done)}. Waiting callers are
-- the tokens in k_waiters while the record is in flight (a done record is
-- replayed at once: nobody waits for it), counted from SMEMBERS, which
-- the other scripts call already. A done record's outcome is not
-- returned.
local v = redis.call('GET', k_record)
if not v then
  return nil
end
-- A record of another protocol (it begins with '@') or one no protocol
-- wrote is refused as idem_begin.lua refuses it: "LOCKTAG_PROTOCOL found
-- 1", nothing written.
if string.byte(v) ~= 112 and string.byte(v) ~= 100 then
  refuse(string.match(v, '^@(%d+)') or 'unknown')
end
local waiting, owner = 0, ''
if string.byte(v) == 112 then
  waiting = #redis.call('SMEMBERS', k_waiters)
  owner = string.sub(v, 67)
end
return {string.sub(v, 1, 1), string.sub(v, 3, 66), redis.call('PTTL', k_record), waiting, owner}
