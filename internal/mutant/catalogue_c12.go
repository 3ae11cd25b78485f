package mutant

// c12 are the Lua mutants contract C12 must kill.
var c12 = []Spec{
	{Name: "ring-keeps-empty-lane", Contract: "C12", Rule: "lanes", Defect: "lane claim leaves a lane in the ring after popping its last id",
		Edits: []Edit{{"lane_claim", "redis.call('HINCRBY', KEYS[6], 'active:' .. g, 1)\nring_keep(p, KEYS[6], KEYS[1], g)\n",
			"redis.call('HINCRBY', KEYS[6], 'active:' .. g, 1)\n"}}},
}
