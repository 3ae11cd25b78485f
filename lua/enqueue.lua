-- enqueue: write a new job row, ready now or scheduled; idempotent by id.
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:pending
-- KEYS[3] -> emq:{q}:scheduled
-- KEYS[4] -> emq:{q}:wake
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- ARGV[2] -> payload (opaque bytes, may be empty)
-- ARGV[3] -> delay_ms (integer 0..1e14; 0 = pending now, else scheduled at TIME+delay_ms)
-- Reply: 1 enqueued (row {state, attempts 0, payload}; wake armed); 0 the row exists, nothing changed.
-- Errors: EMQARG bad KEYS/ARGV.
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
-- Every KEYS[i] must be the queue prefix of KEYS[1] (emq:{q}: for a name q) then shape[i].
-- One anchored match takes the prefix and checks the name (the class holds no '}').
local function declare(shape)
  if #KEYS ~= #shape then return nil, 'EMQARG want ' .. #shape .. ' KEYS, got ' .. #KEYS end
  local p = string.match(KEYS[1], '^emq:{[a-z0-9_.%-]+}:')
  if not p or #p > 71 then return nil, 'EMQARG KEYS[1] is not a queue key' end
  for i = 1, #shape do
    if KEYS[i] ~= p .. shape[i] then
      return nil, 'EMQARG KEYS[' .. i .. '] must be ' .. p .. shape[i]
    end
  end
  return p
end

if #ARGV ~= 3 then return redis.error_reply('EMQARG want 3 ARGV, got ' .. #ARGV) end
local id, payload = ARGV[1], ARGV[2]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local delay = int(ARGV[3], 0, MAX_MS)
if not delay then return redis.error_reply('EMQARG delay_ms must be an integer 0..100000000000000') end
local p, err = declare({'job:' .. id, 'pending', 'scheduled', 'wake'})
if not p then return redis.error_reply(err) end

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if delay == 0 then
  redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)
  redis.call('ZADD', KEYS[2], 0, id)
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'state', 'scheduled', 'attempts', 0, 'payload', payload)
  redis.call('ZADD', KEYS[3], now + delay, id)
end
if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end
return 1
