-- release, continued after value.lua (see release.lua): another hold
-- stays, the lock is not the caller's, or waiters may be queued.
local o, f, n, w, rest = parse(v)
if o ~= token then return -1 end
if n > 1 then
  redis.call('SET', KEYS[1], o .. ' ' .. f .. ' ' .. (n - 1) .. ' ' .. w .. rest, 'KEEPTTL')
  return n - 1
end
-- With waiters on one node the lock is not deleted here: it goes to the
-- queue's head (free in common.lua, after release_handoff.lua).
if w ~= '1' or ARGV[2] ~= 'g' then gone(ARGV[2]) end
if w ~= '1' then return 0 end
