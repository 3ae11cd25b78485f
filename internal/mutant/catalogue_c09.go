package mutant

// c09 are the Lua mutants contract C09 must kill.
var c09 = []Spec{
	{Name: "retry-no-delay", Contract: "C09", Rule: "retry", Defect: "retry ignores the delay and returns the job to pending at once",
		Edits: []Edit{{"retry", "if delay == 0 then", "if true then"}}},
}
