-- release, continued after common.lua (see release.lua): the lock was
-- deleted with its waiting flag set, so it goes to the queue's head.
local g, gf, ms, px = free(chan(), ARGV[2], tonumber(ARGV[3]))
if g then return {0, g, gf, ms, px} end
return 0
