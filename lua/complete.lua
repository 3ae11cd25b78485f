-- complete: fenced; the job is done and leaves nothing behind.
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:active
-- KEYS[3] -> emq:{q}:ckpt
-- KEYS[4] -> emq:{q}:errors
-- KEYS[5] -> emq:{q}:laneof
-- KEYS[6] -> emq:{q}:lanes
-- KEYS[7] -> emq:{q}:ring
-- KEYS[8] -> emq:{q}:wake
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- ARGV[2] -> token (integer 1..1e14: the attempts its claim returned)
-- Reply: 1. Row, active entry, checkpoint, last error and lane bookkeeping are removed; a lane
--        that becomes serviceable rejoins the ring and the wake is armed.
-- Errors: EMQSTALE (no row, not active, token differs, or lease at/before TIME; nothing
--         changes); EMQARG bad KEYS/ARGV.
local MAX_MS = 100000000000000
-- An integer ARGV within [lo, hi], or nil.
local function int(s, lo, hi)
  if type(s) ~= 'string' or #s > 16 or not string.find(s, '^%-?%d+$') then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
end
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
-- The fence on the token: nil when (id, token) holds a live lease, else the EMQSTALE line.
local function stale(row, active, id, token, now)
  local f = redis.call('HMGET', row, 'state', 'attempts')
  if not f[1] then return 'EMQSTALE ' .. id .. ' no such job' end
  if f[1] ~= 'active' then return 'EMQSTALE ' .. id .. ' is ' .. f[1] end
  if tonumber(f[2]) ~= token then
    return 'EMQSTALE ' .. id .. ' token ' .. ARGV[2] .. ' but attempts ' .. tostring(f[2])
  end
  local deadline = tonumber(redis.call('ZSCORE', active, id))
  if not deadline or deadline <= now then return 'EMQSTALE ' .. id .. ' lease passed' end
  return nil
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
local id = ARGV[1]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local token = int(ARGV[2], 1, MAX_MS)
if not token then return redis.error_reply('EMQARG token must be an integer 1..100000000000000') end
local p, err = declare({'job:' .. id, 'active', 'ckpt', 'errors', 'laneof', 'lanes', 'ring', 'wake'})
if not p then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local refused = stale(KEYS[1], KEYS[2], id, token, now)
if refused then return redis.error_reply(refused) end
local g = redis.call('HGET', KEYS[5], id)
local s = g and lane_read(p, KEYS[6], KEYS[7], g)

redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[3], id)
-- A last error is written only by retry, fail and reap, and the claim after them mints a token
-- of 2 or more (revive clears it): a first attempt has none to remove.
if token > 1 then redis.call('HDEL', KEYS[4], id) end
if g then
  redis.call('HDEL', KEYS[5], id)
  lane_release(KEYS[6], g, s)
  if ring_fix(KEYS[7], g, s) then arm(KEYS[8]) end
end
return 1
