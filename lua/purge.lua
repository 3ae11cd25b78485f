-- purge: a dead job gone for good.
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:dead
-- KEYS[3] -> emq:{q}:errors
-- KEYS[4] -> emq:{q}:ckpt
-- KEYS[5] -> emq:{q}:laneof
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- Reply: 1 purged (row, dead entry, error, checkpoint, laneof removed); 0 the job is not dead.
-- Errors: EMQARG bad KEYS/ARGV.
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

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local id = ARGV[1]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local p, err = declare({'job:' .. id, 'dead', 'errors', 'ckpt', 'laneof'})
if not p then return redis.error_reply(err) end

if redis.call('HGET', KEYS[1], 'state') ~= 'dead' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HDEL', KEYS[5], id)
return 1
