-- check: what the locker needs from this server, as the user it logs in as
-- (Locker.Check). It runs after info.lua. No KEYS, so that it runs as it
-- is on every master of a Cluster; it writes nothing.
-- Arguments: a_key (a lock key under the locker's prefix), a_channel (''
-- or where to PUBLISH a_payload), a_payload, then a_commands, the commands
-- the locker's scripts call.
-- Reply: {server_seconds, problem...}: each problem is "name" (this user
-- may not run it on a_key; PUBLISH: on a_key..':c'), "name?" (the server
-- does not know it), or "!version" (a Redis older than 7.0: the scripts
-- need SET ... NX GET, GETDEL and PXAT), "~policy" (a maxmemory is set
-- and its policy is not noeviction: the server may evict a held lock's
-- key), "~?" (INFO is refused to this user: the policy cannot be read),
-- "%aof" (the append-only file is off: a restart loses what was written
-- since the last snapshot). Facts, read where INFO is allowed, follow
-- as "=name:value": "=maxmemory:<bytes>", "=policy:<maxmemory-policy>",
-- "=evicted:<evicted_keys>", "=aof:<0|1>" (info.lua's info_facts).
-- redis.acl_check_cmd and redis.REDIS_VERSION exist from Redis 7.0 (Valkey
-- has both); before, only TIME is tried, and the version is read from INFO
-- where the user may run it (a server that answers neither, as an
-- in-memory fake, is not judged).
local problems = {}
local version = redis.REDIS_VERSION
if not version then
  local ok, info = pcall(redis.call, 'INFO', 'server')
  version = ok and type(info) == 'string' and string.match(info, 'redis_version:([%d.]+)')
end
if version and tonumber(string.match(version, '^(%d+)') or '7') < 7 then
  problems[#problems + 1] = '!' .. version
end
if not info_facts(problems) and redis.acl_check_cmd then
  problems[#problems + 1] = '~?'
end
local time_ok = true
if redis.acl_check_cmd then
  for _, cmd in ipairs(a_commands) do
    local ok, allowed
    if cmd == 'PUBLISH' then
      ok, allowed = pcall(redis.acl_check_cmd, cmd, a_key .. ':c', 'x')
    else
      ok, allowed = pcall(redis.acl_check_cmd, cmd, a_key)
    end
    if not ok then
      problems[#problems + 1] = cmd .. '?'
    elseif not allowed then
      problems[#problems + 1] = cmd
      if cmd == 'TIME' then time_ok = false end
    end
  end
end
local now = 0
if time_ok then
  local ok, t = pcall(redis.call, 'TIME')
  if ok then
    now = tonumber(t[1])
  else
    problems[#problems + 1] = 'TIME'
  end
end
if a_channel ~= '' then
  redis.call('PUBLISH', a_channel, a_payload)
end
return {now, unpack(problems)}
