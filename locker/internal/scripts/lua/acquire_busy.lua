-- acquire, a busy lock's common case, after acquire_free.lua: a first try
-- that waits ('a', wait_ms > 0) finds the lock held by another owner
-- (found) and joins the queue. It is join and put (mutex.lua, value.lua)
-- written out, run before any helper is defined (see handover.lua): every
-- waiter of a contended lock makes this call once. Any other case goes on
-- to acquire.lua with clock and found as they are.
-- A value of another protocol (it begins with '@') goes on to parse,
-- which refuses it.
if found and ARGV[4] == 'a' and not KEYS[4] and tonumber(ARGV[3]) > 0 and string.byte(found) ~= 64 then
  -- "owner fence holds queue granted ends from[ label]", split around
  -- queue, which this call may rewrite.
  local pre, o, q, post, e = string.match(found, '^((%S+) %d+ %d+ )(%d+)( %d+ (%d+) %S+.*)$')
  local nowms = tonumber(clock_ms)
  if o and o ~= ARGV[1] and (q == '0' or e + 0 > nowms) then
    local en = ARGV[1] .. ' ' .. ARGV[3] .. ' ' .. ARGV[2] .. ' ' .. ARGV[5]
    if ARGV[7] and ARGV[7] ~= '' then en = en .. ' ' .. ARGV[7] end
    redis.call('ZADD', KEYS[2], clock_us, en)
    -- The queue lives until this wait is over and QUEUE_MARGIN more,
    -- stretched by QUEUE_SLACK when it must grow (common.lua, mutex.lua).
    local life = q + 0
    local need = nowms + ARGV[3] + 1000
    if life < need then
      life = need + 1000
      redis.call('PEXPIREAT', KEYS[2], string.format('%d', life))
      redis.call('SET', KEYS[1], pre .. string.format('%d', life) .. post, 'PXAT', string.format('%d', math.max(e + 0, life)))
    elseif redis.call('PTTL', KEYS[2]) == -1 then
      redis.call('PEXPIREAT', KEYS[2], q)
    end
    return {0, 0, 0, e - nowms, nowms}
  end
end
