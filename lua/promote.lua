-- promote: move due scheduled ids (score <= TIME) to pending or their lane. A bounded scan.
-- KEYS[1] -> emq:{q}:scheduled
-- KEYS[2] -> emq:{q}:pending
-- KEYS[3] -> emq:{q}:wake
-- KEYS[4] -> emq:{q}:laneof
-- KEYS[5] -> emq:{q}:lanes
-- KEYS[6] -> emq:{q}:ring
-- ARGV[1] -> limit (integer 1..10000)
-- Reply: the number promoted; the wake is armed if any.
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

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local limit = int(ARGV[1], 1, 10000)
if not limit then return redis.error_reply('EMQARG limit must be an integer 1..10000') end
local p, err = declare({'scheduled', 'pending', 'wake', 'laneof', 'lanes', 'ring'})
if not p then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
local n = 0
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local row = p .. 'job:' .. id
  if redis.call('HGET', row, 'state') == 'scheduled' then -- else a stray entry, now removed
    n = n + 1
    redis.call('HSET', row, 'state', 'pending')
    local g = redis.call('HGET', KEYS[4], id)
    if g then
      redis.call('ZADD', p .. 'lane:' .. g, 0, id)
      ring_fix(p, KEYS[5], KEYS[6], g)
    else
      redis.call('ZADD', KEYS[2], 0, id)
    end
  end
end
if n > 0 then arm(KEYS[3]) end
return n
