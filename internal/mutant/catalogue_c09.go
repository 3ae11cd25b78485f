package mutant

// c09 are the Lua mutants contract C09 must kill.
var c09 = []Spec{
	{Name: "retry-no-delay", Contract: "C09", Rule: "retry", Defect: "retry ignores the delay and returns the job to pending at once",
		Edits: []Edit{{"retry", "if delay == 0 then", "if true then"}}},
	{Name: "retry-delay-as-seconds", Contract: "C09", Rule: "retry-delay-scheduled", Defect: "retry reads delay_ms as seconds: due at TIME + 1000·delay",
		Edits: []Edit{{"retry", "redis.call('ZADD', KEYS[4], now + delay, id)", "redis.call('ZADD', KEYS[4], now + delay * 1000, id)"}}},
	{Name: "retry-zero-delay-scheduled", Contract: "C09", Rule: "retry-zero-delay-pending", Defect: "retry with delay 0 parks the job in scheduled at TIME instead of pending",
		Edits: []Edit{{"retry", "if delay == 0 then", "if delay < 0 then"}}},
	{Name: "retry-forgets-error", Contract: "C09", Rule: "retry-keeps-error", Defect: "retry deletes the last error instead of keeping it",
		Edits: []Edit{{"retry", "redis.call('HSET', KEYS[6], id, text)", "redis.call('HDEL', KEYS[6], id)"}}},
	{Name: "retry-no-wake", Contract: "C09", Rule: "retry-arms-wake", Defect: "a retried job does not arm the wake: parked consumers sleep on work",
		Edits: []Edit{{"retry", "arm(KEYS[7])\nreturn 'retried'", "return 'retried'"}}},
	{Name: "retry-drops-checkpoint", Contract: "C09", Rule: "A3-ckpt-survives-retry", Defect: "retry deletes the checkpoint, so the next attempt starts over",
		Edits: []Edit{{"retry", "redis.call('HSET', KEYS[6], id, text)", "redis.call('HSET', KEYS[6], id, text)\nredis.call('HDEL', p .. 'ckpt', id)"}}},
	{Name: "checkpoint-first-write-wins", Contract: "C09", Rule: "ckpt-current-attempt", Defect: "checkpoint uses HSETNX: a later checkpoint never replaces the first",
		Edits: []Edit{{"checkpoint", "redis.call('HSET', KEYS[3], id, ARGV[3])", "redis.call('HSETNX', KEYS[3], id, ARGV[3])"}}},
	{Name: "complete-keeps-error", Contract: "C09", Rule: "complete-after-retry", Defect: "complete forgets the last error a retry left",
		Edits: []Edit{{"complete", "if token > 1 then redis.call('HDEL', KEYS[4], id) end", ""}}},
	{Name: "promote-ignores-limit", Contract: "C09", Rule: "promote-limit", Defect: "promote moves every due job, whatever the limit",
		Edits: []Edit{{"promote", "'LIMIT', 0, limit)", "'LIMIT', 0, 10000)"}}},
	{Name: "promote-grace-second", Contract: "C09", Rule: "promote-due-only", Defect: "promote moves jobs due within the next second (a grace window)",
		Edits: []Edit{{"promote", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now,", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + 1000,"}}},
	{Name: "promote-always-arms", Contract: "C09", Rule: "promote-arms-when-moved", Defect: "promote arms the wake even when nothing moved: idle consumers spin",
		Edits: []Edit{{"promote", "if n > 0 then arm(KEYS[3]) end", "arm(KEYS[3])"}}},
	{Name: "promote-count-flag", Contract: "C09", Rule: "promote-count", Defect: "promote answers 1 when it moved anything, not the count",
		Edits: []Edit{{"promote", "n = n + 1", "n = 1"}}},
}
