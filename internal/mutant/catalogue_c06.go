package mutant

// c06 are the Lua mutants contract C06 must kill.
var c06 = []Spec{
	{Name: "claim-no-increment", Contract: "C06", Rule: "claim", Defect: "claim does not increment attempts: the token never changes",
		Edits: []Edit{{"claim", "local attempts = tonumber(f[1]) + 1", "local attempts = tonumber(f[1]) + 0"}}},
}
