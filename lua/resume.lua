-- resume: lift a queue pause; re-arm the wake if work is waiting.
-- KEYS[1] -> emq:{q}:meta
-- KEYS[2] -> emq:{q}:pending
-- KEYS[3] -> emq:{q}:ring
-- KEYS[4] -> emq:{q}:wake
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
local function arm(wake)
  if redis.call('LLEN', wake) == 0 then redis.call('RPUSH', wake, '1') end
end

if #ARGV ~= 0 then return redis.error_reply('EMQARG want 0 ARGV, got ' .. #ARGV) end
local p, err = declare({'meta', 'pending', 'ring', 'wake'})
if not p then return redis.error_reply(err) end

redis.call('HDEL', KEYS[1], 'paused')
if redis.call('ZCARD', KEYS[2]) > 0 or redis.call('LLEN', KEYS[3]) > 0 then arm(KEYS[4]) end
return 1
