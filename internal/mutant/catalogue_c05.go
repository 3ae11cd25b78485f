package mutant

// c05 are the Lua mutants contract C05 must kill.
var c05 = []Spec{
	{Name: "claim-newest", Contract: "C05", Rule: "mint-order", Defect: "claim pops the newest pending id (ZPOPMAX)",
		Edits: []Edit{{"claim", "redis.call('ZPOPMIN', KEYS[1])", "redis.call('ZPOPMAX', KEYS[1])"}}},
}
