-- claim: pop the oldest pending id and lease it; the claim mints the token (attempts + 1).
-- KEYS[1] -> emq:{q}:pending
-- KEYS[2] -> emq:{q}:active
-- KEYS[3] -> emq:{q}:meta
-- KEYS[4] -> emq:{q}:wake
-- KEYS[5] -> emq:{q}:ckpt
-- KEYS[6] -> emq:{q}:ring
-- ARGV[1] -> lease_ms (integer 1..1e14)
-- Reply: empty array when the queue is paused or nothing is pending; else
--        {id, payload, attempts (the token), checkpoint of an earlier attempt or nil}.
--        The wake is re-armed while pending ids or serviceable lanes remain.
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
if #ARGV ~= 1 then return redis.error_reply('EMQARG want 1 ARGV, got ' .. #ARGV) end
local lease = int(ARGV[1], 1, MAX_MS)
if not lease then return redis.error_reply('EMQARG lease_ms must be an integer 1..100000000000000') end
local p, err = declare({'pending', 'active', 'meta', 'wake', 'ckpt', 'ring'})
if not p then return redis.error_reply(err) end

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
-- Re-arm while pending ids or ring lanes remain; a token already waiting settles it at once. (In a
-- migration the script runs only if every declared key is here, wake too, so it never reads a
-- pending the pop emptied.)
local function rearm()
  if redis.call('LLEN', KEYS[4]) == 0 and
    (redis.call('ZCARD', KEYS[1]) > 0 or redis.call('LLEN', KEYS[6]) > 0) then
    redis.call('RPUSH', KEYS[4], '1')
  end
end
if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end
-- The oldest id (what ZPOPMIN takes) and its row are read before the pop.
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if #head == 0 then return {} end
local id = head[1]
local row = p .. 'job:' .. id
touch({row})
-- One read for existence, the token and the payload; one write mints the token.
local f = redis.call('HMGET', row, 'attempts', 'payload')
redis.call('ZPOPMIN', KEYS[1])
if not f[1] then -- an orphan id: dropping it is the repair
  rearm()
  return {}
end
local attempts = tonumber(f[1]) + 1
redis.call('HSET', row, 'state', 'active', 'attempts', attempts)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + lease, id)
rearm()
-- Only an earlier attempt can have left a checkpoint: a first claim has none to read.
local saved = false
if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end
return {id, f[2], attempts, saved}
