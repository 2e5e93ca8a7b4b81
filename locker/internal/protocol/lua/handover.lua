-- release, the busy lock's common case, after release.lua: the caller's
-- last hold of a lock whose lease is running, with waiters queued, handed
-- to the first live one ('g'). It is free and grant (mutex.lua) written
-- out, run before any helper is defined: the definitions and the general
-- path make the call cost Redis about 40 % more, and a hand-over is the
-- lock's idle time while others wait (docs/benchmarks.md, one hot key).
-- Any other value falls through to release_held.lua, with v as GETDEL
-- took it.
if a_handoff == 'g' and string.sub(v, 1, i - 1) == a_token .. ' ' then
  -- "token fence 1 queue granted ends from[ label]", queue not 0.
  local f, q, e = string.match(v, '^(%d+) 1 ([1-9]%d*) %d+ (%d+) ', i)
  if f then
    local t = redis.call('TIME')
    local us = t[2]
    if #us < 6 then us = string.sub('00000' .. us, -6) end
    local ms = t[1] .. string.sub(us, 1, 3)
    local nowms = tonumber(ms)
    if e + 0 > nowms then
      -- pop in common.lua, written out: the first waiter whose wait is
      -- not over.
      while true do
        local h = redis.call('ZPOPMIN', k_queue)
        if #h == 0 then return 0 end
        local w, wait, ttl, sid, label = string.match(h[1], '^(%S+) (%d+) (%d+) (%S+) ?(.*)$')
        if math.floor(h[2] / 1000) + wait >= nowms then
          -- take in value.lua with grant's lease: the whole ttl for a
          -- waiter of the caller's subscriber (a_sid), else the window.
          local px = ttl + 0
          if sid ~= a_sid then px = math.min(px, a_window_ms + 0) end
          -- mint in fence.lua: past the server clock too.
          local nf = string.format('%d', math.max(f + 1, tonumber(t[1] .. us)))
          local ends = nowms + px
          local nv = w .. ' ' .. nf .. ' 1 ' .. q .. ' ' .. ms .. ' ' .. string.format('%d', ends) .. ' ' .. sid
          if label ~= '' then nv = nv .. ' ' .. label end
          redis.call('SET', k_lock, nv, 'PXAT', string.format('%d', math.max(ends, q + 0)))
          if sid ~= a_sid then
            redis.call('PUBLISH', k_lock .. ':c', w .. ' ' .. nf .. ' ' .. ms .. ' ' .. px)
          end
          return {0, w, nf + 0, nowms, px}
        end
      end
    end
  end
end
