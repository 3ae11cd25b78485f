-- lane_pause: lane g keeps its backlog and leaves the ring.
-- KEYS[1] -> emq:{q}:lanes
-- KEYS[2] -> emq:{q}:ring
-- ARGV[1] -> lane g (1-64 bytes of [a-z0-9_.-])
-- Reply: 1.
-- Errors: EMQARG bad KEYS/ARGV.
local function is_name(s)
  return type(s) == 'string' and #s <= 64 and string.find(s, '^[a-z0-9_.%-]+$') ~= nil
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

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local g = ARGV[1]
if not is_name(g) then return redis.error_reply('EMQARG lane must be 1-64 bytes of [a-z0-9_.-]') end
local p, err = declare({'lanes', 'ring'})
if not p then return redis.error_reply(err) end

redis.call('HSET', KEYS[1], 'paused:' .. g, '1')
redis.call('LREM', KEYS[2], 0, g)
return 1
