-- sem_idle: how a semaphore's release (sem_release.lua, which follows)
-- leaves the lock when its sole live holder goes and nobody waits: one DEL
-- of both keys. Nothing in the details hash is of use then (its entries
-- belong to holders and queued waiters; an ended permit left by a crashed
-- holder would only be purged), and the next take mints from the clock
-- (sem_acquire_idle.lua).
local function idle(token)
  redis.call('DEL', KEYS[1], KEYS[3])
end
