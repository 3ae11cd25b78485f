-- lane_ceiling: set lane g's ceiling on concurrently active jobs; 0 removes it (unlimited). The
-- lane joins or leaves the ring to match (the wake is armed when it joins).
-- KEYS[1] -> emq:{q}:lane:<g>
-- KEYS[2] -> emq:{q}:lanes
-- KEYS[3] -> emq:{q}:ring
-- KEYS[4] -> emq:{q}:wake
-- ARGV[1] -> lane g (the lane KEYS[1] names)
-- ARGV[2] -> ceiling n (integer 0..1e9; 0 = unlimited)
-- Reply: 1.
-- Errors: EMQARG bad KEYS/ARGV.
-- An integer ARGV within [lo, hi], or nil.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.find(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
end
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
local g = ARGV[1]
if not is_name(g) then return redis.error_reply('EMQARG lane must be 1-64 bytes of [a-z0-9_.-]') end
local n = int(ARGV[2], 0, 1000000000)
if not n then return redis.error_reply('EMQARG ceiling must be an integer 0..1000000000') end
local p, err = declare({'lane:' .. g, 'lanes', 'ring', 'wake'})
if not p then return redis.error_reply(err) end

if n == 0 then
  redis.call('HDEL', KEYS[2], 'ceiling:' .. g)
else
  redis.call('HSET', KEYS[2], 'ceiling:' .. g, n)
end
if ring_fix(p, KEYS[2], KEYS[3], g) then arm(KEYS[4]) end
return 1
