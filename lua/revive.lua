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

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local id = ARGV[1]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local p, err = declare({'job:' .. id, 'dead', 'pending', 'errors', 'wake', 'laneof', 'lanes', 'ring'})
if not p then return redis.error_reply(err) end

if redis.call('HGET', KEYS[1], 'state') ~= 'dead' then return 0 end
local g = redis.call('HGET', KEYS[6], id)
local s = g and lane_read(p, KEYS[7], KEYS[8], g)
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HSET', KEYS[1], 'state', 'pending')
if g then
  s.ids = s.ids + redis.call('ZADD', p .. 'lane:' .. g, 0, id)
  ring_fix(KEYS[8], g, s)
else
  redis.call('ZADD', KEYS[3], 0, id)
end
arm(KEYS[5])
return 1
