package mutant

// c07 are the Lua mutants contract C07 must kill.
var c07 = []Spec{
	{Name: "complete-any-token", Contract: "C07", Rule: "fenced", Defect: "complete does not compare the token",
		Edits: []Edit{{"complete", "if tonumber(f[2]) ~= token then", "if false then"}}},
	{Name: "complete-expired-lease", Contract: "C07", Rule: "fenced", Defect: "complete accepts a lease that has passed",
		Edits: []Edit{{"complete", "if not deadline or deadline <= now then", "if not deadline then"}}},
}
