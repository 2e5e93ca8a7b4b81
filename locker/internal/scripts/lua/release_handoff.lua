-- release, continued after common.lua (see release.lua): the last hold
-- went with the waiting flag set, so the lock goes to the queue's head,
-- with a token larger than the freed lock's (f).
local g, gf, ms, px = free(chan(), ARGV[2], tonumber(ARGV[3]), tonumber(f))
if g then return {0, g, gf, ms, px} end
return 0
