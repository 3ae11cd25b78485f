-- extend: fenced; move the lease deadline to TIME+lease_ms (a long handler's heartbeat).
-- KEYS[1] -> emq:{q}:job:<id>
-- KEYS[2] -> emq:{q}:active
-- ARGV[1] -> id (the JOB id KEYS[1] names)
-- ARGV[2] -> token (integer 1..1e14: the attempts its claim returned)
-- ARGV[3] -> lease_ms (integer 1..1e14)
-- Reply: the new deadline (server ms).
-- Errors: EMQSTALE (see complete; nothing changes); EMQARG bad KEYS/ARGV.
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

if #ARGV ~= 3 then return redis.error_reply('EMQARG want 3 ARGV, got ' .. #ARGV) end
local id = ARGV[1]
if not is_job(id) then return redis.error_reply('EMQARG id must be a JOB id') end
local token = int(ARGV[2], 1, MAX_MS)
if not token then return redis.error_reply('EMQARG token must be an integer 1..100000000000000') end
local lease = int(ARGV[3], 1, MAX_MS)
if not lease then return redis.error_reply('EMQARG lease_ms must be an integer 1..100000000000000') end
local p, err = declare({'job:' .. id, 'active'})
if not p then return redis.error_reply(err) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local refused = stale(KEYS[1], KEYS[2], id, token, now)
if refused then return redis.error_reply(refused) end

redis.call('ZADD', KEYS[2], 'XX', now + lease, id)
return now + lease
