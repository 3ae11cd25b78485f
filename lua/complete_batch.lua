-- complete_batch: complete several (id, token) pairs, each fenced on its own exactly as complete.
-- KEYS[1] -> emq:{q}:active
-- KEYS[2] -> emq:{q}:ckpt
-- KEYS[3] -> emq:{q}:errors
-- KEYS[4] -> emq:{q}:laneof
-- KEYS[5] -> emq:{q}:lanes
-- KEYS[6] -> emq:{q}:ring
-- KEYS[7] -> emq:{q}:wake
-- For each pair k = 0..n-1 (n = 1..1000):
-- KEYS[8+k] -> emq:{q}:job:<id>
-- ARGV[1+2k] -> id (the JOB id KEYS[8+k] names)
-- ARGV[2+2k] -> token (integer 1..1e14: the attempts its claim returned)
-- Reply: one status per pair, in order: 1 (completed as complete does: row, active entry,
--        checkpoint, last error and lane bookkeeping removed; a lane that becomes serviceable
--        rejoins the ring and the wake is armed) or the EMQSTALE error reply complete would give
--        for that pair, which changes nothing. Pairs settle in order: a repeated pair is stale.
-- Errors: EMQARG bad KEYS/ARGV (n = 1..1000 pairs; nothing changes).
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
-- Every KEYS[i] must be the queue prefix of KEYS[1] (emq:{q}: for a name q) then shape[i];
-- #KEYS is checked by the caller (the fixed keys and one row per pair).
local function declare(shape)
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

local FIXED = 7
local n = #ARGV / 2
if #ARGV % 2 ~= 0 or n < 1 or n > 1000 then
  return redis.error_reply('EMQARG want 1..1000 (id, token) pairs in ARGV, got ' .. #ARGV .. ' values')
end
if #KEYS ~= FIXED + n then
  return redis.error_reply('EMQARG want ' .. (FIXED + n) .. ' KEYS, got ' .. #KEYS)
end
local p, err = declare({'active', 'ckpt', 'errors', 'laneof', 'lanes', 'ring', 'wake'})
if not p then return redis.error_reply(err) end
local ids, tokens = {}, {}
for k = 1, n do
  local id = ARGV[2 * k - 1]
  if not is_job(id) then return redis.error_reply('EMQARG pair ' .. k .. ': id must be a JOB id') end
  local token = int(ARGV[2 * k], 1, MAX_MS)
  if not token then
    return redis.error_reply('EMQARG pair ' .. k .. ': token must be an integer 1..100000000000000')
  end
  if KEYS[FIXED + k] ~= p .. 'job:' .. id then
    return redis.error_reply('EMQARG KEYS[' .. (FIXED + k) .. '] must be ' .. p .. 'job:' .. id)
  end
  ids[k], tokens[k] = id, token
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The fence per pair, as complete: the row (state, attempts) and the lease. Each id's lease is
-- read once for all pairs; a pair whose id an earlier pair settled finds no row.
local deadlines = redis.call('ZMSCORE', KEYS[1], unpack(ids))
local out, rows, done, late, settled = {}, {}, {}, {}, {}
for k = 1, n do
  local id, token = ids[k], tokens[k]
  local f = settled[id] and {false} or redis.call('HMGET', KEYS[FIXED + k], 'state', 'attempts')
  local refused
  if not f[1] then
    refused = 'EMQSTALE ' .. id .. ' no such job'
  elseif f[1] ~= 'active' then
    refused = 'EMQSTALE ' .. id .. ' is ' .. f[1]
  elseif tonumber(f[2]) ~= token then
    refused = 'EMQSTALE ' .. id .. ' token ' .. ARGV[2 * k] .. ' but attempts ' .. tostring(f[2])
  else
    local deadline = tonumber(deadlines[k])
    if not deadline or deadline <= now then refused = 'EMQSTALE ' .. id .. ' lease passed' end
  end
  if refused then
    out[k] = redis.error_reply(refused)
  else
    out[k] = 1
    settled[id] = true
    rows[#rows + 1] = KEYS[FIXED + k]
    done[#done + 1] = id
    -- A last error exists only for a later attempt (see complete).
    if token > 1 then late[#late + 1] = id end
  end
end
if #done == 0 then return out end
-- The lanes of the settled jobs and their state, read before the first write.
local lanes, st = redis.call('HMGET', KEYS[4], unpack(done)), {}
for i = 1, #done do
  local g = lanes[i]
  if g and not st[g] then st[g] = lane_read(p, KEYS[5], KEYS[6], g) end
end

redis.call('DEL', unpack(rows))
redis.call('ZREM', KEYS[1], unpack(done))
redis.call('HDEL', KEYS[2], unpack(done))
if #late > 0 then redis.call('HDEL', KEYS[3], unpack(late)) end
-- Lane bookkeeping in pair order, each release followed by its ring fix, as n completes would.
local gone, wake = {}, false
for i = 1, #done do
  local g = lanes[i]
  if g then
    gone[#gone + 1] = done[i]
    lane_release(KEYS[5], g, st[g])
    if ring_fix(KEYS[6], g, st[g]) then wake = true end
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[4], unpack(gone)) end
if wake then arm(KEYS[7]) end
return out
