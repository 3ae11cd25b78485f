-- purge: a dead job gone for good.
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:dead
-- KEYS[3] -> emq:{q}:errors
-- KEYS[4] -> emq:{q}:ckpt
-- KEYS[5] -> emq:{q}:laneof
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- Reply: 1 purged (row, dead entry, error, checkpoint, laneof removed); 0 the job is not dead.
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
