-- revive: a dead job back to pending (or its lane), attempts intact, last error cleared.
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:dead
-- KEYS[3] -> emq:{q}:pending
-- KEYS[4] -> emq:{q}:errors
-- KEYS[5] -> emq:{q}:wake
-- KEYS[6] -> emq:{q}:laneof
-- KEYS[7] -> emq:{q}:lanes
-- KEYS[8] -> emq:{q}:ring
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- Reply: 1 revived (wake armed); 0 the job is not dead (nothing changed).
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
local function arm(wake)
  if redis.call('LLEN', wake) == 0 then redis.call('RPUSH', wake, '1') end
end
-- Lane g is in the ring iff it is serviceable: ids in its lane key, not paused, active below
-- its ceiling (none = unlimited); at most once, keeping its place. True when it joined.
local function ring_fix(p, lanes, ring, g)
  local f = redis.call('HMGET', lanes, 'active:' .. g, 'ceiling:' .. g, 'paused:' .. g)
  local active, ceiling = tonumber(f[1]) or 0, tonumber(f[2])
  local ok = not f[3] and (not ceiling or active < ceiling) and
    redis.call('ZCARD', p .. 'lane:' .. g) > 0
  local at = redis.call('LPOS', ring, g)
  if ok and not at then
    redis.call('RPUSH', ring, g)
    return true
  end
  if not ok and at then redis.call('LREM', ring, 0, g) end
  return false
end
local function lane_release(lanes, g)
  if redis.call('HINCRBY', lanes, 'active:' .. g, -1) <= 0 then
    redis.call('HDEL', lanes, 'active:' .. g)
  end
end

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local id = ARGV[1]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local p, err = declare({'job:' .. id, 'dead', 'pending', 'errors', 'wake', 'laneof', 'lanes', 'ring'})
if not p then return redis.error_reply(err) end

if redis.call('HGET', KEYS[1], 'state') ~= 'dead' then return 0 end
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HSET', KEYS[1], 'state', 'pending')
local g = redis.call('HGET', KEYS[6], id)
if g then
  redis.call('ZADD', p .. 'lane:' .. g, 0, id)
  ring_fix(p, KEYS[7], KEYS[8], g)
else
  redis.call('ZADD', KEYS[3], 0, id)
end
arm(KEYS[5])
return 1
