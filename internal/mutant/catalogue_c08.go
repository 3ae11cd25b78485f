package mutant

// c08 are the Lua mutants contract C08 must kill.
var c08 = []Spec{
	{Name: "complete-keeps-checkpoint", Contract: "C08", Rule: "complete", Defect: "complete leaves the checkpoint behind",
		Edits: []Edit{{"complete", "redis.call('HDEL', KEYS[3], id)\n", ""}}},
	{Name: "complete-keeps-laneof", Contract: "C08", Rule: "complete-lane", Defect: "complete of a lane job leaves its laneof entry behind",
		Edits: []Edit{{"complete", "  redis.call('HDEL', KEYS[5], id)\n", ""}}},
	{Name: "complete-no-lane-release", Contract: "C08", Rule: "complete-lane", Defect: "complete of a lane job does not lower the lane's active count",
		Edits: []Edit{{"complete", "  lane_release(KEYS[6], g, s)\n", ""}}},
	{Name: "complete-error-from-third-attempt", Contract: "C08", Rule: "complete-error", Defect: "complete removes the last error only from token 3 on (off by one): a job completed on its first redelivery keeps its error",
		Edits: []Edit{{"complete", "if token > 1 then redis.call('HDEL', KEYS[4], id) end", "if token > 2 then redis.call('HDEL', KEYS[4], id) end"}}},
	{Name: "complete-drops-other-lane-count", Contract: "C08", Rule: "complete-lane", Defect: "complete deletes the lane's whole active count instead of lowering it by one",
		Edits: []Edit{{"complete", "  lane_release(KEYS[6], g, s)\n", "  redis.call('HDEL', KEYS[6], 'active:' .. g)\n  s.active = 0\n"}}},
	{Name: "complete-rejoins-paused-lane", Contract: "C08", Rule: "lanes", Defect: "complete's ring check forgets the lane pause: a paused lane rejoins the ring when it drops below its ceiling",
		Edits: []Edit{{"complete", "local ok = not s.paused and (not s.ceiling or s.active < s.ceiling) and", "local ok = (not s.ceiling or s.active < s.ceiling) and"}}},
	{Name: "complete-no-rejoin", Contract: "C08", Rule: "lanes", Defect: "complete never puts its lane back in the ring: a lane that was at its ceiling stays out for good",
		Edits: []Edit{{"complete", "  if ring_fix(KEYS[7], g, s) then arm(KEYS[8]) end\n", ""}}},
	{Name: "complete-batch-releases-two", Contract: "C08", Rule: "A17-complete-batch", Defect: "complete_batch lowers a lane's active count by two per settled job: a lane with two jobs claimed counts none after one completes, and admits one past its ceiling (make mutation's bundle survivor complete_batch.lua:79, seed 20251)",
		Edits: []Edit{{"complete_batch", "s.active = redis.call('HINCRBY', lanes, 'active:' .. g, -1)", "s.active = redis.call('HINCRBY', lanes, 'active:' .. g, -2)"}}},
}
