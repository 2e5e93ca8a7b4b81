-- facts: what a replica's INFO says (Locker.Check and Locker.ServerFacts
-- run it on each replica a failover may promote). It runs after info.lua
-- under the flags no-writes (a read-only replica runs it) and allow-stale
-- (so does one whose link to its master is down). No KEYS, no ARGV.
-- Reply: {0, fact...}: info_facts' facts, or {0, "~?"} where INFO is
-- refused to this user.
local out = {0}
if not info_facts(out) then
  out[2] = '~?'
end
return out
