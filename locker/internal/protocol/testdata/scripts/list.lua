-- list: its keys and arguments by name (Layouts, layout.go).
local a_cursor, a_pattern, a_count = ARGV[1], ARGV[2], ARGV[3]
-- list: one SCAN step on this node, for operators. Read-only; no keys
-- (each call goes to one node: the caller visits every master).
-- Arguments: a_cursor, a_pattern (MATCH), a_count (COUNT hint).
-- Reply: {next cursor ('0': done), key, key, ...}.
local r = redis.call('SCAN', a_cursor, 'MATCH', a_pattern, 'COUNT', a_count)
local out = {r[1]}
for _, k in ipairs(r[2]) do out[#out + 1] = k end
return out
