package mutant

// c11 are the Lua mutants contract C11 must kill.
var c11 = []Spec{
	{Name: "reap-live-leases", Contract: "C11", Rule: "reap", Defect: "reap ignores the deadline and returns live leases",
		Edits: []Edit{{"reap", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now,", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf',"}}},
	{Name: "checkpoint-dropped", Contract: "C11", Rule: "checkpoint", Defect: "claim does not return the checkpoint to the redelivery",
		Edits: []Edit{{"claim", "if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end\n", ""}}},
}
