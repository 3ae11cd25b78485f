-- lane_pause: lane g keeps its backlog and leaves the ring.
-- KEYS[1] -> emq:{q}:lanes
-- KEYS[2] -> emq:{q}:ring
-- ARGV[1] -> lane g (1-64 bytes of [a-z0-9_.-])
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

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local g = ARGV[1]
if not is_name(g) then return redis.error_reply('EMQARG lane must be 1-64 bytes of [a-z0-9_.-]') end
local p, err = declare({'lanes', 'ring'})
if not p then return redis.error_reply(err) end

redis.call('HSET', KEYS[1], 'paused:' .. g, '1')
redis.call('LREM', KEYS[2], 0, g)
return 1
