-- info: what INFO says about the settings a lock's safety depends on
-- (check.lua on a master, facts.lua on a replica). info_facts appends to
-- out "~policy" (a maxmemory is set and its policy is not noeviction: the
-- server may evict a held lock's key), "=maxmemory:<bytes>",
-- "=policy:<maxmemory-policy>", "=evicted:<evicted_keys>", "=aof:<0|1>"
-- and "%aof" (the append-only file is off: a restart loses what was
-- written since the last snapshot). It returns false, having appended
-- nothing, where INFO is refused to the user (or the server does not
-- answer it).
local function info_facts(out)
  local ok, memory = pcall(redis.call, 'INFO', 'memory')
  if not ok or type(memory) ~= 'string' then
    return false
  end
  local maxmemory = tonumber(string.match(memory, '\nmaxmemory:(%d+)') or '0')
  local policy = string.match(memory, 'maxmemory_policy:([%w-]+)')
  if maxmemory > 0 and policy and policy ~= 'noeviction' then
    out[#out + 1] = '~' .. policy
  end
  out[#out + 1] = '=maxmemory:' .. maxmemory
  out[#out + 1] = '=policy:' .. (policy or '')
  local ok_stats, stats = pcall(redis.call, 'INFO', 'stats')
  if ok_stats and type(stats) == 'string' then
    out[#out + 1] = '=evicted:' .. (string.match(stats, 'evicted_keys:(%d+)') or '0')
  end
  local ok_p, persistence = pcall(redis.call, 'INFO', 'persistence')
  if ok_p and type(persistence) == 'string' then
    local aof = string.match(persistence, 'aof_enabled:(%d)')
    if aof then
      out[#out + 1] = '=aof:' .. aof
      if aof == '0' then
        out[#out + 1] = '%aof'
      end
    end
  end
  return true
end
