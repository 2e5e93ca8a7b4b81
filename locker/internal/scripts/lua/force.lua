-- force: free a mutex whoever holds it (Locker.ForceRelease), as if its
-- holder had released its last hold: the queue's head gets it and is told,
-- with a token larger than the freed lock's.
-- ARGV: control channel, reason, handoff ('g', see free), window_ms.
-- The holder's Locker is told "owner reason" on the control channel.
-- Reply: {} when the lock is not held (nothing is touched), else {owner,
-- "fence holds[ granted[ label]]", grantee or '', its fence, server_ms,
-- pttl_ms}.
local v = redis.call('GET', KEYS[1])
if not v then return {} end
local o, f, n, w, rest = parse(v)
if w ~= '1' or ARGV[3] ~= 'g' then redis.call('DEL', KEYS[1]) end -- else free
redis.call('PUBLISH', ARGV[1], o .. ' ' .. ARGV[2])
local out = {o, f .. ' ' .. n .. rest, '', 0, 0, 0}
if w == '1' then
  local g, gf, ms, px = free(chan(), ARGV[3], tonumber(ARGV[4]), tonumber(f))
  if g then
    out[3], out[4], out[5], out[6] = g, gf, ms, px
  end
end
return out
