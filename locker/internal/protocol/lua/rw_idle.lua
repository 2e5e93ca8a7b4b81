-- rw_idle: how a read/write lock's release (sem_release.lua, which
-- follows) leaves the lock when its sole live holder goes and nobody
-- waits: the holders' zset goes, and so do the holder's entry and the
-- writer mark in the details hash, which keeps the last writer's token
-- (F) until it expires — its lease plus a second after the last take or
-- renewal (sem_expire) — so that a reader that comes meanwhile gets that
-- writer's token (rw_acquire_idle.lua). Its keys are passed in, as
-- sem_idle.lua's.
local function idle(token, holders, records)
  redis.call('DEL', holders)
  redis.call('HDEL', records, '=' .. token, 'W')
end
