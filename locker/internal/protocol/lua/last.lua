-- The lock's last value (Redlock only), after value.lua, in the mutex
-- scripts whose layout passes k_last: P{name}:f, which a release leaves
-- on each master until the released lease would have ended (see gone),
-- for its token. A script without k_last mints from the clock (COUNTER
-- false) and keeps no last value.
COUNTER = k_last ~= nil and string.sub(k_last, -2) == ':f'

-- gone: the last hold of l went and its key is deleted. Redlock (handoff
-- 'n', with k_last) keeps the value in k_last for the rest of its lease,
-- at least a lease after its token was minted: the next holder's majority
-- shares a master with this one, which then mints a larger token even
-- when its clock is behind the clock that minted this one (last, mint's
-- prev).
local function gone(l, handoff, v)
  if handoff == 'n' and k_last then
    redis.call('SET', k_last, v, 'PXAT', fmt(l.ends))
  end
end

-- last is the token of the lock's last holder that this master keeps
-- (Redlock, see gone), or nil.
local function last()
  if not k_last then return nil end
  local v = redis.call('GET', k_last)
  if v and string.byte(v) == 64 then refuse(string.match(v, '^@(%d+)') or 'unknown') end
  return v and tonumber(string.match(v, '^%S+ (%d+)'))
end
