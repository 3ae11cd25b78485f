package mutant

// c14 are the Lua mutants contract C14 must kill.
var c14 = []Spec{
	{Name: "wake-twice", Contract: "C14", Rule: "wake", Defect: "enqueue pushes a wake token even when one is waiting (the list grows past one)",
		Edits: []Edit{{"enqueue", "if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nreturn 1",
			"redis.call('RPUSH', KEYS[4], '1')\nreturn 1"}}},
}
