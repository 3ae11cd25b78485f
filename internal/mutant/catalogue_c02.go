package mutant

// c02 are the Lua mutants contract C02 must kill.
var c02 = []Spec{
	{Name: "stray-key", Contract: "C02", Rule: "wire-keys-parse", Defect: "enqueue also counts into emq:{q}:enqueued, a key outside the grammar",
		Edits: []Edit{{"enqueue", "if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nreturn 1",
			"if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nredis.call('INCR', p .. 'enqueued')\nreturn 1"}}},
}
