-- enqueue_batch: write several new job rows in one call, each idempotent by id as enqueue.
-- KEYS[1] -> emq:{q}:pending
-- KEYS[2] -> emq:{q}:scheduled
-- KEYS[3] -> emq:{q}:wake
-- For each job k = 0..n-1 (n = 1..1000):
-- KEYS[4+k] -> emq:{q}:job:<id>
-- ARGV[1+3k] -> id (the JOB id KEYS[4+k] names)
-- ARGV[2+3k] -> payload (opaque bytes, may be empty)
-- ARGV[3+3k] -> delay_ms (integer 0..1e14; 0 = pending now, else scheduled at TIME+delay_ms)
-- Reply: one integer per job, in order: 1 enqueued (row {state, attempts 0, payload}) or 0 the
--        row exists, nothing changed for it (a repeated id: the first enqueues, the rest are
--        0). The wake is armed once when any job was enqueued.
-- Errors: EMQARG bad KEYS/ARGV (n = 1..1000 jobs; nothing changes).
local MAX_MS = 100000000000000
-- An integer ARGV within [lo, hi], or nil.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.find(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
end
local function is_job(s)
  return type(s) == 'string' and #s == 14 and string.find(s, '^JOB[0-9A-Za-z]+$') ~= nil
end
-- Every KEYS[i] must be the queue prefix of KEYS[1] (emq:{q}: for a name q) then shape[i];
-- #KEYS is checked by the caller (the fixed keys and one row per job).
local function declare(shape)
  local p = string.match(KEYS[1], '^emq:{[a-z0-9_.%-]+}:')
  if not p or #p > 71 then return nil, 'EMQARG KEYS[1] is not a queue key' end
  for i = 1, #shape do
    if KEYS[i] ~= p .. shape[i] then
      return nil, 'EMQARG KEYS[' .. i .. '] must be ' .. p .. shape[i]
    end
  end
  return p
end

local FIXED = 3
local n = #ARGV / 3
if #ARGV % 3 ~= 0 or n < 1 or n > 1000 then
  return redis.error_reply('EMQARG want 1..1000 (id, payload, delay_ms) triples in ARGV, got ' .. #ARGV .. ' values')
end
if #KEYS ~= FIXED + n then
  return redis.error_reply('EMQARG want ' .. (FIXED + n) .. ' KEYS, got ' .. #KEYS)
end
local p, err = declare({'pending', 'scheduled', 'wake'})
if not p then return redis.error_reply(err) end
local delays, timed = {}, false
for k = 1, n do
  local id = ARGV[3 * k - 2]
  if not is_job(id) then return redis.error_reply('EMQARG job ' .. k .. ': id must be a JOB id') end
  local delay = int(ARGV[3 * k], 0, MAX_MS)
  if not delay then
    return redis.error_reply('EMQARG job ' .. k .. ': delay_ms must be an integer 0..100000000000000')
  end
  if KEYS[FIXED + k] ~= p .. 'job:' .. id then
    return redis.error_reply('EMQARG KEYS[' .. (FIXED + k) .. '] must be ' .. p .. 'job:' .. id)
  end
  delays[k] = delay
  if delay > 0 then timed = true end
end

local now = 0
if timed then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Rows are written in order: a repeated id finds the row its first occurrence wrote. One
-- EXISTS over every row spares the per-row check when none exists yet (the common case); the
-- set memberships are one ZADD per set for the whole batch.
local some = redis.call('EXISTS', unpack(KEYS, FIXED + 1)) > 0
local out, ready, later, seen = {}, {}, {}, {}
for k = 1, n do
  local row, id = KEYS[FIXED + k], ARGV[3 * k - 2]
  if seen[id] or (some and redis.call('EXISTS', row) == 1) then
    out[k] = 0
  else
    seen[id] = true
    out[k] = 1
    if delays[k] == 0 then
      redis.call('HSET', row, 'state', 'pending', 'attempts', 0, 'payload', ARGV[3 * k - 1])
      ready[#ready + 1] = 0
      ready[#ready + 1] = id
    else
      redis.call('HSET', row, 'state', 'scheduled', 'attempts', 0, 'payload', ARGV[3 * k - 1])
      later[#later + 1] = now + delays[k]
      later[#later + 1] = id
    end
  end
end
if #ready > 0 then redis.call('ZADD', KEYS[1], unpack(ready)) end
if #later > 0 then redis.call('ZADD', KEYS[2], unpack(later)) end
if (#ready > 0 or #later > 0) and redis.call('LLEN', KEYS[3]) == 0 then
  redis.call('RPUSH', KEYS[3], '1')
end
return out
