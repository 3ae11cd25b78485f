package mutant

// c13 are the Lua mutants contract C13 must kill.
var c13 = []Spec{
	{Name: "pause-ignored", Contract: "C13", Rule: "queue-pause", Defect: "claim ignores a queue-wide pause",
		Edits: []Edit{{"claim", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end\n", ""}}},
	{Name: "ceiling-ignored", Contract: "C13", Rule: "ceiling", Defect: "lane_ceiling records nothing: the lane's ceiling is never enforced",
		Edits: []Edit{{"lane_ceiling", "redis.call('HSET', KEYS[2], 'ceiling:' .. g, n)", "local _ = n"}}},
}
