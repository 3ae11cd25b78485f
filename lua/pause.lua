-- pause: stop claims on the whole queue (claim and lane_claim answer empty); work is kept.
-- KEYS[1] -> emq:{q}:meta
-- Reply: 1.
-- Errors: EMQARG bad KEYS/ARGV.
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

if #ARGV ~= 0 then return redis.error_reply('EMQARG want 0 ARGV, got ' .. #ARGV) end
local p, err = declare({'meta'})
if not p then return redis.error_reply(err) end

redis.call('HSET', KEYS[1], 'paused', '1')
return 1
