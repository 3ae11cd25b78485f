package mutant

// walk are the Lua mutants only the model-checked walks kill: defects on a path of several ops
// (a lane job through retry, promote or revive; a count left behind by a settle; a revived
// job's error). Each names the contract whose walk clause kills it.
var walk = []Spec{
	{Name: "walk-revive-keeps-error", Contract: "C10", Rule: "walk-revive", Defect: "revive leaves the last error behind",
		Edits: []Edit{{"revive", "redis.call('HDEL', KEYS[4], id)\n", ""}}},
	{Name: "walk-revive-lane-off-ring", Contract: "C10", Rule: "walk-lane-return", Defect: "revive returns a lane job to its lane but not its lane to the ring",
		Edits: []Edit{{"revive", "  ring_fix(KEYS[8], g, s)\n", ""}}},
	{Name: "walk-purge-keeps-laneof", Contract: "C10", Rule: "morgue", Defect: "purge leaves the job's laneof entry behind",
		Edits: []Edit{{"purge", "redis.call('HDEL', KEYS[5], id)\n", ""}}},
	{Name: "walk-fail-keeps-lane-count", Contract: "C10", Rule: "walk-lane-count", Defect: "fail does not release the lane's active count",
		Edits: []Edit{{"fail", "  lane_release(KEYS[6], g, s)\n", ""}}},
	{Name: "walk-retry-lane-to-pending", Contract: "C12", Rule: "walk-lane-return", Defect: "retry (delay 0) puts a lane job in the plain pending set",
		Edits: []Edit{{"retry", "    s.ids = s.ids + redis.call('ZADD', p .. 'lane:' .. g, 0, id)\n", "    redis.call('ZADD', KEYS[3], 0, id)\n"}}},
	{Name: "walk-promote-lane-to-pending", Contract: "C12", Rule: "walk-lane-return", Defect: "promote puts a due lane job in the plain pending set",
		Edits: []Edit{{"promote", "    if g then\n      st[g].ids", "    if false then\n      st[g].ids"}}},
	{Name: "walk-lane-delay-no-laneof", Contract: "C12", Rule: "walk-lane-return", Defect: "a delayed lane enqueue forgets the lane (laneof written only for delay 0)",
		Edits: []Edit{{"lane_enqueue", "redis.call('HSET', KEYS[5], id, g)\nif delay == 0 then\n", "if delay == 0 then\n  redis.call('HSET', KEYS[5], id, g)\n"}}},
	{Name: "walk-reap-keeps-lane-count", Contract: "C10", Rule: "walk-lane-count", Defect: "reap does not release the lane's active count",
		Edits: []Edit{{"reap", "    if g then lane_release(KEYS[7], g, s) end\n", ""}}},
	{Name: "walk-lane-resume-no-wake", Contract: "C12", Rule: "wake", Defect: "lane_resume returns a lane to the ring without arming the wake",
		Edits: []Edit{{"lane_resume", "if ring_fix(KEYS[3], g, s) then arm(KEYS[4]) end", "ring_fix(KEYS[3], g, s)"}}},
	{Name: "walk-revive-no-wake", Contract: "C10", Rule: "walk-revive", Defect: "revive returns a job to pending without arming the wake",
		Edits: []Edit{{"revive", "arm(KEYS[5])\nreturn 1", "return 1"}}},
	{Name: "walk-delayed-lane-row-pending", Contract: "C12", Rule: "walk-model", Defect: "a delayed lane enqueue writes its row as pending while it sits in scheduled (promote then drops it)",
		Edits: []Edit{{"lane_enqueue", "redis.call('HSET', KEYS[1], 'state', 'scheduled', 'attempts', 0, 'payload', payload)", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)"}}},
	{Name: "walk-completed-row-kept", Contract: "C12", Rule: "walk-model", Defect: "complete keeps the job's row with state completed instead of deleting it: a completed job leaves its row behind, in a state outside the four",
		Edits: []Edit{{"complete", "redis.call('DEL', KEYS[1])", "redis.call('HSET', KEYS[1], 'state', 'completed')"}}},
}
