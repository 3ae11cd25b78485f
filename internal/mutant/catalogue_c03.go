package mutant

// c03 are the Lua mutants contract C03 must kill.
var c03 = []Spec{
	{Name: "enqueue-overwrites", Contract: "C03", Rule: "enqueue", Defect: "enqueue of an existing id overwrites the row (not idempotent)",
		Edits: []Edit{{"enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n", ""}}},
}
