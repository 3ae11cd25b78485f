-- fence: install or check the deployment's bundle (PROTOCOL.md §5).
-- KEYS[1] -> {emq}:bundle
-- ARGV[1] -> version (non-empty, e.g. echomq:2.0.0)
-- ARGV[2] -> digest (40 lower-case hex: SHA1 over the sorted name:sha1 lines)
-- Reply: bulk "installed" (the bundle was absent; both fields now written) or "ok" (it matches).
-- Errors: EMQVERSION want <version>/<digest> have <version>/<digest>; EMQARG bad KEYS/ARGV.
if #KEYS ~= 1 or KEYS[1] ~= '{emq}:bundle' then
  return redis.error_reply('EMQARG KEYS must be exactly {emq}:bundle')
end
if #ARGV ~= 2 then return redis.error_reply('EMQARG want 2 ARGV, got ' .. #ARGV) end
local version, digest = ARGV[1], ARGV[2]
if version == '' or string.find(version, '%s') then
  return redis.error_reply('EMQARG version must be non-empty, without spaces')
end
if #digest ~= 40 or string.find(digest, '[^0-9a-f]') then
  return redis.error_reply('EMQARG digest must be 40 lower-case hex')
end

local have = redis.call('HMGET', KEYS[1], 'version', 'digest')
if not have[1] and not have[2] then
  redis.call('HSET', KEYS[1], 'version', version, 'digest', digest)
  return 'installed'
end
if have[1] == version and have[2] == digest then return 'ok' end
return redis.error_reply('EMQVERSION want ' .. version .. '/' .. digest ..
  ' have ' .. (have[1] or '') .. '/' .. (have[2] or ''))
