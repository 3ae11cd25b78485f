package mutant

import "github.com/echomq/kit/reference/bus"

// goMutants break the port's Go side: the handshake, the minter, the key builder, the consumer.
var goMutants = []Spec{
	{Name: "fence-late", Contract: "C01", Rule: "wire-fence-first", Defect: "the minter lease (SET NX) is taken before the bundle fence runs",
		Defects: bus.Defects{FenceLate: true}},
	{Name: "no-refence", Contract: "C01", Rule: "reconnect", Defect: "a reconnect skips the fence",
		Defects: bus.Defects{NoRefence: true}},
	{Name: "wrong-kind-accepted", Contract: "C01", Rule: "server", Defect: "a server that is not Valkey >= 8.1 standalone is admitted",
		AllowEngine: true},
	{Name: "eval-edited", Contract: "C02", Rule: "wire-evalsha", Defect: "enqueue sends EVAL of an edited source instead of EVALSHA of the bundle's",
		Defects: bus.Defects{EvalEnqueue: true}},
	{Name: "argv-key", Contract: "C02", Rule: "wire-declared-keys", Defect: "enqueue writes the row under a key built from a prefix passed in ARGV (the seed's defect) instead of its declared KEYS[1]",
		Defects: bus.Defects{ArgvRowPrefix: true},
		Edits: []Edit{
			{"enqueue", "if #ARGV ~= 3 then", "if #ARGV ~= 4 then"},
			{"enqueue", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)",
				"redis.call('HSET', ARGV[4] .. id, 'state', 'pending', 'attempts', 0, 'payload', payload)"},
		}},
	{Name: "lax-queue-name", Contract: "C04", Rule: "key-builder", Defect: "the key builder sends a queue or lane name outside the grammar",
		Defects: bus.Defects{LaxQueueNames: true}},
	{Name: "lax-id-brand", Contract: "C04", Rule: "key-builder", Defect: "the key builder accepts a well-formed id of another brand",
		Defects: bus.Defects{LaxIDBrand: true}},
	{Name: "minter-repeats", Contract: "C05", Rule: "mint-order", Defect: "the minter restarts its sequence at every call: ids repeat within one millisecond",
		Defects: bus.Defects{RepeatIDs: true}},
	{Name: "client-clock-lease", Contract: "C06", Rule: "clock", Defect: "claim sends an instant from the client's clock and the script stores it as the deadline",
		Defects: bus.Defects{ClientClockLease: true},
		Edits:   []Edit{{"claim", "redis.call('ZADD', KEYS[2], now + lease, id)", "redis.call('ZADD', KEYS[2], lease, id)"}}},
	{Name: "poll-park", Contract: "C14", Rule: "park", Defect: "an idle consumer polls claim every 5 ms instead of blocking on the wake key",
		Defects: bus.Defects{PollPark: true}},
}
