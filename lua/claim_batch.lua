-- claim_batch: claim up to n pending ids in one call, each exactly as claim would.
-- KEYS[1] -> emq:{q}:pending
-- KEYS[2] -> emq:{q}:active
-- KEYS[3] -> emq:{q}:meta
-- KEYS[4] -> emq:{q}:wake
-- KEYS[5] -> emq:{q}:ckpt
-- KEYS[6] -> emq:{q}:ring
-- ARGV[1] -> lease_ms (integer 1..1e14)
-- ARGV[2] -> n (integer 1..1000: the most ids to claim)
-- Reply: empty array when the queue is paused or nothing is pending; else up to n claims, oldest
--        first, each {id, payload, attempts (the token), checkpoint of an earlier attempt or nil}.
--        Every lease is TIME+lease_ms; the wake is re-armed while pending ids or serviceable
--        lanes remain.
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
if #ARGV ~= 2 then return redis.error_reply('EMQARG want 2 ARGV, got ' .. #ARGV) end
local lease = int(ARGV[1], 1, MAX_MS)
if not lease then return redis.error_reply('EMQARG lease_ms must be an integer 1..100000000000000') end
local n = int(ARGV[2], 1, 1000)
if not n then return redis.error_reply('EMQARG n must be an integer 1..1000') end
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

if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end
-- The n oldest ids (what ZPOPMIN takes) and their rows are read before the pop.
local head = redis.call('ZRANGE', KEYS[1], 0, n - 1)
if #head == 0 then return {} end
local rows, fs = {}, {}
for i, id in ipairs(head) do rows[i] = p .. 'job:' .. id end
touch(rows)
for i = 1, #head do fs[i] = redis.call('HMGET', rows[i], 'attempts', 'payload') end
redis.call('ZPOPMIN', KEYS[1], n)
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease
-- Per id one read and one write of its row, as claim; the lease and checkpoint operations on
-- the shared keys are one call each for the whole batch. (The wake is declared, so present in a
-- migration: the re-arm below never reads a pending the pop emptied.)
local out, leases, again = {}, {}, {}
for i, id in ipairs(head) do
  local f = fs[i]
  if f[1] then -- an orphan id (no row) is dropped: that is the repair
    local attempts = tonumber(f[1]) + 1
    redis.call('HSET', rows[i], 'state', 'active', 'attempts', attempts)
    leases[#leases + 1] = deadline
    leases[#leases + 1] = id
    out[#out + 1] = {id, f[2], attempts, false}
    -- Only an earlier attempt can have left a checkpoint.
    if attempts > 1 then again[#again + 1] = #out end
  end
end
if #leases > 0 then redis.call('ZADD', KEYS[2], unpack(leases)) end
if #again > 0 then
  local ids = {}
  for i = 1, #again do ids[i] = out[again[i]][1] end
  local saved = redis.call('HMGET', KEYS[5], unpack(ids))
  for i = 1, #again do out[again[i]][4] = saved[i] end
end
if redis.call('LLEN', KEYS[4]) == 0 and
  (redis.call('ZCARD', KEYS[1]) > 0 or redis.call('LLEN', KEYS[6]) > 0) then
  redis.call('RPUSH', KEYS[4], '1')
end
return out
