package mutant

// c06 are the Lua mutants contract C06 must kill.
var c06 = []Spec{
	{Name: "claim-no-increment", Contract: "C06", Rule: "claim", Defect: "claim does not increment attempts: the token never changes",
		Edits: []Edit{{"claim", "local attempts = tonumber(f[1]) + 1", "local attempts = tonumber(f[1]) + 0"}}},
	{Name: "claim-payload-formatted", Contract: "C06", Rule: "claim-payload-bytes", Defect: "claim passes the payload through string.format('%s'), which stops at the first NUL byte of a short payload",
		Edits: []Edit{{"claim", "return {id, f[2], attempts, saved}", "return {id, string.format('%s', f[2]), attempts, saved}"}}},
	{Name: "lane-claim-payload-formatted", Contract: "C06", Rule: "claim-payload-bytes", Defect: "lane_claim passes the payload through string.format('%s'), which stops at the first NUL byte of a short payload",
		Edits: []Edit{{"lane_claim", "return {id, f[2], attempts, saved, g}", "return {id, string.format('%s', f[2]), attempts, saved, g}"}}},
	{Name: "claim-checkpoint-from-third-attempt", Contract: "C06", Rule: "claim-checkpoint-bytes", Defect: "claim reads the checkpoint only from the third attempt on (off by one): the first redelivery gets none",
		Edits: []Edit{{"claim", "if attempts > 1 then saved", "if attempts > 2 then saved"}}},
	{Name: "lane-claim-checkpoint-from-third-attempt", Contract: "C06", Rule: "claim-checkpoint-bytes", Defect: "lane_claim reads the checkpoint only from the third attempt on (off by one): the first redelivery gets none",
		Edits: []Edit{{"lane_claim", "if attempts > 1 then saved", "if attempts > 2 then saved"}}},
	{Name: "claim-consumes-checkpoint", Contract: "C06", Rule: "claim-exact", Defect: "claim deletes the checkpoint it hands to the redelivery: a second redelivery starts over",
		Edits: []Edit{{"claim", "if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end", "if attempts > 1 then\n  saved = redis.call('HGET', KEYS[5], id)\n  redis.call('HDEL', KEYS[5], id)\nend"}}},
	{Name: "lane-claim-consumes-checkpoint", Contract: "C06", Rule: "claim-exact", Defect: "lane_claim deletes the checkpoint it hands to the redelivery",
		Edits: []Edit{{"lane_claim", "if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end", "if attempts > 1 then\n  saved = redis.call('HGET', KEYS[5], id)\n  redis.call('HDEL', KEYS[5], id)\nend"}}},
	{Name: "claim-row-lease-field", Contract: "C06", Rule: "row", Defect: "claim stores the lease in the row as a fourth field (the row is exactly state, attempts, payload)",
		Edits: []Edit{{"claim", "redis.call('HSET', row, 'state', 'active', 'attempts', attempts)", "redis.call('HSET', row, 'state', 'active', 'attempts', attempts, 'lease_ms', lease)"}}},
	{Name: "lane-claim-row-lane-field", Contract: "C06", Rule: "row", Defect: "lane_claim stores the lane in the row as a fourth field",
		Edits: []Edit{{"lane_claim", "redis.call('HSET', row, 'state', 'active', 'attempts', attempts)", "redis.call('HSET', row, 'state', 'active', 'attempts', attempts, 'lane', g)"}}},
	{Name: "lane-claim-rotates-when-paused", Contract: "C06", Rule: "queue-pause", Defect: "lane_claim rotates the ring before it checks the queue pause: every empty claim on a paused queue reorders the lanes",
		Edits: []Edit{{"lane_claim", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end\nlocal g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')",
			"local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')\nif redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end"}}},
	{Name: "checkpoint-appends", Contract: "C06", Rule: "checkpoint", Defect: "checkpoint appends to the stored bytes instead of replacing them",
		Edits: []Edit{{"checkpoint", "redis.call('HSET', KEYS[3], id, ARGV[3])", "redis.call('HSET', KEYS[3], id, (redis.call('HGET', KEYS[3], id) or '') .. ARGV[3])"}}},
}
