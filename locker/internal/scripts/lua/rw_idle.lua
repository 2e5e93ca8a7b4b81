-- rw_idle: how a read/write lock's release (sem_release.lua, which
-- follows) leaves the lock when its sole live holder goes and nobody
-- waits: the holders' zset goes, and so do the holder's entry and the
-- writer mark in the details hash, which keeps the last writer's token
-- (F) until it expires — its lease plus a second after the last take or
-- renewal (sem_expire) — so that a reader that comes meanwhile gets that
-- writer's token (rw_acquire_idle.lua).
local function idle(token)
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[3], '=' .. token, 'W')
end
