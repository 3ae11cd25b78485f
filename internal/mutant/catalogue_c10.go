package mutant

// c10 are the Lua mutants contract C10 must kill.
var c10 = []Spec{
	{Name: "retry-never-buries", Contract: "C10", Rule: "retry", Defect: "retry at max attempts retries instead of burying",
		Edits: []Edit{{"retry", "if token >= max then", "if false then"}}},
	{Name: "revive-resets-attempts", Contract: "C10", Rule: "tokens", Defect: "revive resets attempts to 0, so a token is issued twice",
		Edits: []Edit{{"revive", "redis.call('HSET', KEYS[1], 'state', 'pending')", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0)"}}},
}
