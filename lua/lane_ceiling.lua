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
-- Reads before writes: while the queue's slot migrates key by key, Valkey aborts a script at its
-- first command on a key that is not on this node (moved out, not yet moved in, or emptied by
-- the script itself), keeping what it already wrote. So every key the writes need is touched
-- before the first write by one multi-key EXISTS with a declared key, which aborts on an absent
-- key on either side of a migration (a single-key read of an absent key answers nil on the
-- importing node), and no key is read after a write that may have emptied it. Outside a
-- migration the touch is a plain read.

-- Lane g as the ring sees it, read before any write: active count, ceiling, pause, the ids in
-- its lane key (touched with lanes first, see above) and its ring membership.
local function lane_read(p, lanes, ring, g)
  local lane = p .. 'lane:' .. g
  redis.call('EXISTS', lanes, lane)
  local f = redis.call('HMGET', lanes, 'active:' .. g, 'ceiling:' .. g, 'paused:' .. g)
  return {active = tonumber(f[1]) or 0, ceiling = tonumber(f[2]), paused = f[3],
    ids = redis.call('ZCARD', lane), at = redis.call('LPOS', ring, g)}
end
-- Lane g is in the ring iff it is serviceable: ids in its lane key, not paused, active below
-- its ceiling (none = unlimited); at most once, keeping its place. s is g's state (lane_read)
-- as this script's writes left it. True when it joined.
local function ring_fix(ring, g, s)
  local ok = not s.paused and (not s.ceiling or s.active < s.ceiling) and s.ids > 0
  if ok and not s.at then
    redis.call('RPUSH', ring, g)
    s.at = true
    return true
  end
  if not ok and s.at then
    redis.call('LREM', ring, 0, g)
    s.at = false
  end
  return false
end
-- One active job of lane g is over: its count drops, and is deleted at 0.
local function lane_release(lanes, g, s)
  s.active = redis.call('HINCRBY', lanes, 'active:' .. g, -1)
  if s.active <= 0 then
    redis.call('HDEL', lanes, 'active:' .. g)
    s.active = 0
  end
end

if #ARGV ~= 2 then return redis.error_reply('EMQARG want 2 ARGV, got ' .. #ARGV) end
local g = ARGV[1]
if not is_name(g) then return redis.error_reply('EMQARG lane must be 1-64 bytes of [a-z0-9_.-]') end
local n = int(ARGV[2], 0, 1000000000)
if not n then return redis.error_reply('EMQARG ceiling must be an integer 0..1000000000') end
local p, err = declare({'lane:' .. g, 'lanes', 'ring', 'wake'})
if not p then return redis.error_reply(err) end

local s = lane_read(p, KEYS[2], KEYS[3], g)
if n == 0 then
  redis.call('HDEL', KEYS[2], 'ceiling:' .. g)
  s.ceiling = nil
else
  redis.call('HSET', KEYS[2], 'ceiling:' .. g, n)
  s.ceiling = n
end
if ring_fix(KEYS[3], g, s) then arm(KEYS[4]) end
return 1
