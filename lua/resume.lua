-- resume: lift a queue pause; re-arm the wake if work is waiting.
-- KEYS[1] -> emq:{q}:meta
-- KEYS[2] -> emq:{q}:pending
-- KEYS[3] -> emq:{q}:ring
-- KEYS[4] -> emq:{q}:wake
-- Reply: 1.
-- Errors: EMQARG bad KEYS/ARGV.
local MAX_MS = 100000000000000
-- An integer ARGV within [lo, hi], or nil.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.match(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
end
local function is_job(s)
  return type(s) == 'string' and #s == 14 and string.match(s, '^JOB[0-9A-Za-z]+$') ~= nil
end
local function is_name(s)
  return type(s) == 'string' and #s >= 1 and #s <= 64 and not string.find(s, '[^a-z0-9_%.%-]')
end
-- Every KEYS[i] must be the queue prefix of KEYS[1] (up to and including "}:") then shape[i].
local function declare(shape)
  if #KEYS ~= #shape then return nil, 'EMQARG want ' .. #shape .. ' KEYS, got ' .. #KEYS end
  local k = KEYS[1]
  local e = string.find(k, '}:', 6, true)
  local p = e and string.sub(k, 1, e + 1)
  if not p or string.sub(k, 1, 5) ~= 'emq:{' or not is_name(string.sub(p, 6, -3)) then
    return nil, 'EMQARG KEYS[1] is not a queue key'
  end
  for i = 1, #shape do
    if KEYS[i] ~= p .. shape[i] then
      return nil, 'EMQARG KEYS[' .. i .. '] must be ' .. p .. shape[i]
    end
  end
  return p
end
local function arm(wake)
  if redis.call('LLEN', wake) == 0 then redis.call('RPUSH', wake, '1') end
end

if #ARGV ~= 0 then return redis.error_reply('EMQARG want 0 ARGV, got ' .. #ARGV) end
local p, err = declare({'meta', 'pending', 'ring', 'wake'})
if not p then return redis.error_reply(err) end

redis.call('HDEL', KEYS[1], 'paused')
if redis.call('ZCARD', KEYS[2]) > 0 or redis.call('LLEN', KEYS[3]) > 0 then arm(KEYS[4]) end
return 1
