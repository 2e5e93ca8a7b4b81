-- sem_idle: how a semaphore's release (sem_release.lua, which follows)
-- leaves the lock when its sole live holder goes and nobody waits: one DEL
-- of both keys. Nothing in the details hash is of use then (its entries
-- belong to holders and queued waiters; an ended permit left by a crashed
-- holder would only be purged), and the next take mints from the clock
-- (sem_acquire_idle.lua). Its keys (k_holders, k_records) are passed in,
-- so that defining it captures no upvalue: that would cost the release an
-- allocation.
local function idle(token, holders, records)
  redis.call('DEL', holders, records)
end
