-- reap: return expired leases (score <= TIME) to pending or their lane, or to the morgue at
-- max_attempts; attempts unchanged. A bounded scan of at most limit ids.
-- KEYS[1] -> emq:{q}:active
-- KEYS[2] -> emq:{q}:pending
-- KEYS[3] -> emq:{q}:dead
-- KEYS[4] -> emq:{q}:errors
-- KEYS[5] -> emq:{q}:wake
-- KEYS[6] -> emq:{q}:laneof
-- KEYS[7] -> emq:{q}:lanes
-- KEYS[8] -> emq:{q}:ring
-- ARGV[1] -> max_attempts (integer 1..1e9)
-- ARGV[2] -> limit (integer 1..10000)
-- Reply: the number of expired leases settled (returned + dead). Dead ones get the error
--        "lease expired"; the wake is armed if any returned or a lane rejoined the ring.
-- Errors: EMQARG bad KEYS/ARGV.
-- An integer ARGV within [lo, hi], or nil.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.find(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
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

if #ARGV ~= 2 then return redis.error_reply('EMQARG want 2 ARGV, got ' .. #ARGV) end
local max = int(ARGV[1], 1, 1000000000)
if not max then return redis.error_reply('EMQARG max_attempts must be an integer 1..1000000000') end
local limit = int(ARGV[2], 1, 10000)
if not limit then return redis.error_reply('EMQARG limit must be an integer 1..10000') end
local p, err = declare({'active', 'pending', 'dead', 'errors', 'wake', 'laneof', 'lanes', 'ring'})
if not p then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local n, wake = 0, false
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  local row = p .. 'job:' .. id
  local f = redis.call('HMGET', row, 'state', 'attempts')
  if f[1] == 'active' then -- anything else is a stray entry; removing it is the repair
    n = n + 1
    local g = redis.call('HGET', KEYS[6], id)
    if g then lane_release(KEYS[7], g) end
    if (tonumber(f[2]) or 0) >= max then
      redis.call('HSET', row, 'state', 'dead')
      redis.call('ZADD', KEYS[3], now, id)
      redis.call('HSET', KEYS[4], id, 'lease expired')
    else
      redis.call('HSET', row, 'state', 'pending')
      if g then
        redis.call('ZADD', p .. 'lane:' .. g, 0, id)
      else
        redis.call('ZADD', KEYS[2], 0, id)
      end
      wake = true
    end
    if g and ring_fix(p, KEYS[7], KEYS[8], g) then wake = true end
  end
end
if wake then arm(KEYS[5]) end
return n
