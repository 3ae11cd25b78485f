package mutant

// c08 are the Lua mutants contract C08 must kill.
var c08 = []Spec{
	{Name: "complete-keeps-checkpoint", Contract: "C08", Rule: "complete", Defect: "complete leaves the checkpoint behind",
		Edits: []Edit{{"complete", "redis.call('HDEL', KEYS[3], id)\n", ""}}},
}
