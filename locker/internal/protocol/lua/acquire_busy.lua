-- acquire, a busy lock's common case, after acquire_free.lua: a first try
-- that waits ('a', a_wait_ms > 0) finds the lock held by another owner
-- (found) and joins the queue. It is join and put (mutex.lua, value.lua)
-- written out, run before any helper is defined (see handover.lua): every
-- waiter of a contended lock makes this call once. Any other case goes on
-- to acquire.lua with clock and found as they are.
-- A value of another protocol (it begins with '@') goes on to parse,
-- which refuses it.
if found and a_mode == 'a' and not k_last and tonumber(a_wait_ms) > 0 and string.byte(found) ~= 64 then
  -- "owner fence holds queue granted ends from[ label]", split around
  -- queue, which this call may rewrite.
  local pre, o, q, post, e = string.match(found, '^((%S+) %d+ %d+ )(%d+)( %d+ (%d+) %S+.*)$')
  local nowms = tonumber(clock_ms)
  if o and o ~= a_token and (q == '0' or e + 0 > nowms) then
    local en = a_token .. ' ' .. a_wait_ms .. ' ' .. a_ttl_ms .. ' ' .. a_sid
    if a_label and a_label ~= '' then en = en .. ' ' .. a_label end
    redis.call('ZADD', k_queue, clock_us, en)
    -- The queue lives until this wait is over and QUEUE_MARGIN more,
    -- stretched by QUEUE_SLACK when it must grow (common.lua, mutex.lua).
    local life = q + 0
    local need = nowms + a_wait_ms + 1000
    if life < need then
      life = need + 1000
      redis.call('PEXPIREAT', k_queue, string.format('%d', life))
      redis.call('SET', k_lock, pre .. string.format('%d', life) .. post, 'PXAT', string.format('%d', math.max(e + 0, life)))
    elseif redis.call('PTTL', k_queue) == -1 then
      redis.call('PEXPIREAT', k_queue, q)
    end
    return {0, 0, 0, e - nowms, nowms}
  end
end
