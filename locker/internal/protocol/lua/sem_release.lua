-- sem_release: drop one hold of a permit (or a read/write hold); the last
-- frees it and hands free permits to the queue's head. Arguments: a_token,
-- a_handoff (unused: one node only), a_window_ms, and optionally a_sid (the
-- caller's subscriber). Reply: holds left (>= 0), or -1 when the caller
-- holds no permit (its lease ended; nothing is touched), or {0, token,
-- fence, server_ms, pttl_ms, ...}: the grants to waiters of the caller's
-- Locker, which it wakes itself (no notice is published for them).
-- This file runs first in the script (after the kind's idle), ahead of the
-- shared functions (common.lua, sem_common.lua, the kind's file), so that
-- a release nobody
-- waits for does not pay for defining them (see sem_acquire_idle.lua): it
-- is sem_held and sem_drop written out. Only when waiters may be queued
-- does the script go on, to sem_release_queued.lua, which uses nowms (server
-- ms as text) from here.
-- "Q" in the details hash says waiters may be queued: every script that
-- queues a waiter sets it (sem_acquire.lua, rw_acquire.lua), and it lives
-- in the records hash, which outlives the queue (enqueue in common.lua), so its absence means nobody waits; a release
-- that finds the queue gone drops it. As the mutex's waiting flag, it
-- spares the common release a look at the queue.
-- The lease check asks Redis for the first two live holders (lease end
-- after now) instead of reading the caller's score: the score's reply is
-- a float printed and parsed again, dearer than the command (see
-- sem_acquire_idle.lua); now is text made from TIME's. A sole live holder
-- whose release nobody waits for leaves an idle lock, as the kind's idle
-- says (sem_idle.lua, rw_idle.lua: the one function defined before this
-- file).
local t = redis.call('TIME')
local nowms = t[1] .. string.sub(string.sub('00000' .. t[2], -6), 1, 3)
local r = redis.call('ZRANGEBYSCORE', k_holders, '(' .. nowms, '+inf', 'LIMIT', '0', '2')
if r[1] ~= a_token and r[2] ~= a_token then
  -- Not among the first two live holders: a third, or none.
  local s = #r == 2 and redis.call('ZSCORE', k_holders, a_token)
  if not s or tonumber(s) <= tonumber(nowms) then
    -- Not held. A lock of another protocol (the member '@', see sem_purge
    -- in sem_common.lua) is refused, as refuse in fence.lua does.
    local m = redis.call('ZSCORE', k_holders, '@')
    if m then error({err = 'LOCKTAG_PROTOCOL ' .. m .. ' 1'}) end
    return -1
  end
end
local rec = redis.call('HMGET', k_records, '=' .. a_token, 'Q')
if not rec[1] then return -1 end
local f, n, rest = string.match(rec[1], '^(%d+) (%d+)(.*)$')
if n ~= '1' then
  n = tonumber(n)
  redis.call('HSET', k_records, '=' .. a_token, f .. ' ' .. (n - 1) .. rest)
  return n - 1
end
if not rec[2] and #r == 1 then
  idle(a_token, k_holders, k_records)
  return 0
end
redis.call('ZREM', k_holders, a_token)
redis.call('HDEL', k_records, '=' .. a_token, '?' .. a_token)
if not rec[2] then return 0 end
