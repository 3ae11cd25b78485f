-- lane_claim: take the lane at the ring's head, rotate it to the tail, pop its oldest id and
-- lease it as claim does, counting it active for the lane.
-- KEYS[1] -> emq:{q}:ring
-- KEYS[2] -> emq:{q}:active
-- KEYS[3] -> emq:{q}:meta
-- KEYS[4] -> emq:{q}:wake
-- KEYS[5] -> emq:{q}:ckpt
-- KEYS[6] -> emq:{q}:lanes
-- KEYS[7] -> emq:{q}:pending
-- ARGV[1] -> lease_ms (integer 1..1e14)
-- Reply: empty array when the queue is paused or the ring is empty; else
--        {id, payload, attempts (the token), checkpoint of an earlier attempt or nil, lane}.
--        A lane no longer serviceable leaves the ring; the wake is re-armed while work remains.
-- Errors: EMQARG bad KEYS/ARGV.
local MAX_MS = 100000000000000
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
-- Lane g has just rotated to the ring's tail, so it is in the ring (once): it stays there only
-- while serviceable (ids in its lane key, not paused, active below its ceiling or none).
local function ring_keep(p, lanes, ring, g)
  local f = redis.call('HMGET', lanes, 'active:' .. g, 'ceiling:' .. g, 'paused:' .. g)
  local active, ceiling = tonumber(f[1]) or 0, tonumber(f[2])
  local ok = not f[3] and (not ceiling or active < ceiling) and
    redis.call('ZCARD', p .. 'lane:' .. g) > 0
  if not ok then redis.call('LREM', ring, 0, g) end
end

if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local lease = int(ARGV[1], 1, MAX_MS)
if not lease then return redis.error_reply('EMQARG lease_ms must be an integer 1..100000000000000') end
local p, err = declare({'ring', 'active', 'meta', 'wake', 'ckpt', 'lanes', 'pending'})
if not p then return redis.error_reply(err) end

-- Re-arm while ring lanes or pending ids remain; a token already waiting settles it at once.
local function rearm()
  if redis.call('LLEN', KEYS[4]) == 0 and
    (redis.call('LLEN', KEYS[1]) > 0 or redis.call('ZCARD', KEYS[7]) > 0) then
    redis.call('RPUSH', KEYS[4], '1')
  end
end
if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end
local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
if not g then return {} end
local popped = redis.call('ZPOPMIN', p .. 'lane:' .. g)
local id = popped[1]
local row = id and p .. 'job:' .. id
-- One read for existence, the token and the payload; one write mints the token.
local f = id and redis.call('HMGET', row, 'attempts', 'payload')
if not id or not f[1] then -- a stale ring entry or orphan id: repair
  ring_keep(p, KEYS[6], KEYS[1], g)
  rearm()
  return {}
end
local attempts = tonumber(f[1]) + 1
redis.call('HSET', row, 'state', 'active', 'attempts', attempts)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + lease, id)
redis.call('HINCRBY', KEYS[6], 'active:' .. g, 1)
ring_keep(p, KEYS[6], KEYS[1], g)
rearm()
-- Only an earlier attempt can have left a checkpoint: a first claim has none to read.
local saved = false
if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end
return {id, f[2], attempts, saved, g}
