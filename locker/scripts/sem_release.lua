-- sem_release: drop one hold of a permit (or a read/write hold); the last
-- frees it and hands free permits to the queue's head. ARGV: token, handoff
-- (unused: one node only), window_ms. Reply: holds left (>= 0), or -1 when
-- the caller holds no permit (its lease ended; nothing is touched).
-- This file runs first in the script, ahead of the shared functions
-- (common.lua, sem_common.lua, the kind's file), so that a release nobody
-- waits for does not pay for defining them (see sem_acquire_idle.lua): it
-- is sem_held and sem_drop written out. Only when waiters may be queued
-- does the script go on, to sem_release_queued.lua, which uses nowms and
-- window from here.
-- "Q" in the details hash says waiters may be queued: every script that
-- queues a waiter sets it (sem_acquire.lua, rw_acquire.lua), and it lives
-- in the hash that holds the waiters' details, which outlives the queue
-- (enqueue in common.lua), so its absence means nobody waits; a release
-- that finds the queue gone drops it. As the mutex's waiting flag, it
-- spares the common release a look at the queue.
-- A sole holder (the first two holders by lease end are the caller alone)
-- whose release nobody waits for leaves an idle lock: nothing in the
-- details hash is of use then (its entries belong to holders and queued
-- waiters; see sem_acquire_idle.lua), so one DEL drops both keys.
local token, window = ARGV[1], tonumber(ARGV[3])
local r = redis.call('ZRANGE', KEYS[1], 0, 1, 'WITHSCORES')
local s
if r[1] == token then
  s = r[2]
elseif r[3] == token then
  s = r[4]
else
  s = redis.call('ZSCORE', KEYS[1], token)
end
if not s then return -1 end
local t = redis.call('TIME')
local nowms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(s) <= nowms then return -1 end
local rec = redis.call('HMGET', KEYS[4], '=' .. token, 'Q')
if not rec[1] then return -1 end
local f, n, rest = string.match(rec[1], '^(%d+) (%d+)(.*)$')
n = tonumber(n)
if n > 1 then
  redis.call('HSET', KEYS[4], '=' .. token, f .. ' ' .. (n - 1) .. rest)
  return n - 1
end
if not rec[2] and #r == 2 then
  redis.call('DEL', KEYS[1], KEYS[4])
  return 0
end
redis.call('ZREM', KEYS[1], token)
redis.call('HDEL', KEYS[4], '=' .. token, '?' .. token)
if not rec[2] then return 0 end
