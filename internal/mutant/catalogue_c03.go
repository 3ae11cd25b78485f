package mutant

// c03 are the Lua mutants contract C03 must kill.
var c03 = []Spec{
	{Name: "enqueue-overwrites", Contract: "C03", Rule: "enqueue", Defect: "enqueue of an existing id overwrites the row (not idempotent)",
		Edits: []Edit{{"enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n", ""}}},
	{Name: "lane-enqueue-overwrites", Contract: "C03", Rule: "dup-lane-enqueue", Defect: "lane_enqueue of an existing id writes the row again (idempotency checked only by plain enqueue)",
		Edits: []Edit{{"lane_enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n", ""}}},
	{Name: "lane-enqueue-laneof-first", Contract: "C03", Rule: "dup-lane-enqueue", Defect: "lane_enqueue records laneof before the duplicate check: a duplicate into another lane moves the job's lane",
		Edits: []Edit{
			{"lane_enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\nlocal s = delay == 0 and lane_read(p, KEYS[6], KEYS[7], g)\nredis.call('HSET', KEYS[5], id, g)\n",
				"redis.call('HSET', KEYS[5], id, g)\nif redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\nlocal s = delay == 0 and lane_read(p, KEYS[6], KEYS[7], g)\n"},
		}},
	{Name: "enqueue-duplicate-arms-wake", Contract: "C03", Rule: "dup-no-wake", Defect: "enqueue arms the wake before its duplicate check: a duplicate wakes a consumer for nothing",
		Edits: []Edit{{"enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n",
			"if redis.call('EXISTS', KEYS[1]) == 1 then\n  if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\n  return 0\nend\n"}}},
}
