-- list: one SCAN step on this node, for operators. Read-only; no keys
-- (each call goes to one node: the caller visits every master).
-- ARGV: cursor, MATCH pattern, COUNT hint.
-- Reply: {next cursor ('0': done), key, key, ...}.
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local out = {r[1]}
for _, k in ipairs(r[2]) do out[#out + 1] = k end
return out
