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
-- Reads before writes: while the queue's slot migrates key by key, Valkey aborts a script at its
-- first command on a key that is not on this node (moved out, not yet moved in, or emptied by
-- the script itself), keeping what it already wrote. So every key the writes need is touched
-- before the first write by one multi-key EXISTS with a declared key, which aborts on an absent
-- key on either side of a migration (a single-key read of an absent key answers nil on the
-- importing node), and no key is read after a write that may have emptied it. Outside a
-- migration the touch is a plain read.
local function touch(ks)
  for i = 1, #ks, 1000 do
    redis.call('EXISTS', KEYS[1], unpack(ks, i, math.min(i + 999, #ks)))
  end
end
-- Lane g as the ring sees it, read before any write: active count, ceiling, pause, the ids in
-- its lane key (touched with lanes first) and its ring membership.
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
local max = int(ARGV[1], 1, 1000000000)
if not max then return redis.error_reply('EMQARG max_attempts must be an integer 1..1000000000') end
local limit = int(ARGV[2], 1, 10000)
if not limit then return redis.error_reply('EMQARG limit must be an integer 1..10000') end
local p, err = declare({'active', 'pending', 'dead', 'errors', 'wake', 'laneof', 'lanes', 'ring'})
if not p then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
-- Every expired row, and the lane and lane state of each still active, before the first write.
local rows, jobs, st = {}, {}, {}
for i, id in ipairs(expired) do rows[i] = p .. 'job:' .. id end
touch(rows)
for i, id in ipairs(expired) do
  local f = redis.call('HMGET', rows[i], 'state', 'attempts')
  if f[1] == 'active' then -- anything else is a stray entry; removing it is the repair
    local g = redis.call('HGET', KEYS[6], id)
    if g and not st[g] then st[g] = lane_read(p, KEYS[7], KEYS[8], g) end
    jobs[i] = {g = g, attempts = tonumber(f[2]) or 0}
  end
end
local n, wake = 0, false
for i, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  local row, job = rows[i], jobs[i]
  if job then
    n = n + 1
    local g = job.g
    local s = g and st[g]
    if g then lane_release(KEYS[7], g, s) end
    if job.attempts >= max then
      redis.call('HSET', row, 'state', 'dead')
      redis.call('ZADD', KEYS[3], now, id)
      redis.call('HSET', KEYS[4], id, 'lease expired')
    else
      redis.call('HSET', row, 'state', 'pending')
      if g then
        s.ids = s.ids + redis.call('ZADD', p .. 'lane:' .. g, 0, id)
      else
        redis.call('ZADD', KEYS[2], 0, id)
      end
      wake = true
    end
    if g and ring_fix(KEYS[8], g, s) then wake = true end
  end
end
if wake then arm(KEYS[5]) end
return n
