package mutant

import (
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/reference/bus"
)

// statementMutants break one statement of the documents each that no other catalogue mutant
// broke (issue 28): an argument range, a script's reply, the fence's record, the pause flag.
// Each is killed by the contract that owns the op, on behaviour.
var statementMutants = []Spec{
	// C07: the duration ranges of A16 and the fence of fail.
	{Name: "claim-lease-zero", Contract: "C07", Rule: "A16-durations", Defect: "claim admits lease_ms 0 (the delay range applied to a lease): a lease that has passed as it is granted, and the port passes the value to the script unchecked",
		Edits: []Edit{{"claim", "local lease = int(ARGV[1], 1, MAX_MS)", "local lease = int(ARGV[1], 0, MAX_MS)"}},
		Go:    uncheckedRange("claim", []Edit{{"claim", "local lease = int(ARGV[1], 1, MAX_MS)", "local lease = int(ARGV[1], 0, MAX_MS)"}}, isZero)},
	{Name: "lane-claim-lease-zero", Contract: "C07", Rule: "A16-durations", Defect: "lane_claim admits lease_ms 0: a lease that has passed as it is granted, and the port passes the value to the script unchecked",
		Edits: []Edit{{"lane_claim", "local lease = int(ARGV[1], 1, MAX_MS)", "local lease = int(ARGV[1], 0, MAX_MS)"}},
		Go:    uncheckedRange("lane_claim", []Edit{{"lane_claim", "local lease = int(ARGV[1], 1, MAX_MS)", "local lease = int(ARGV[1], 0, MAX_MS)"}}, isZero)},
	{Name: "extend-lease-zero", Contract: "C07", Rule: "A16-durations", Defect: "extend admits lease_ms 0: a heartbeat that ends the lease it extends, and the port passes the value to the script unchecked",
		Edits: []Edit{{"extend", "local lease = int(ARGV[3], 1, MAX_MS)", "local lease = int(ARGV[3], 0, MAX_MS)"}},
		Go:    uncheckedRange("extend", []Edit{{"extend", "local lease = int(ARGV[3], 1, MAX_MS)", "local lease = int(ARGV[3], 0, MAX_MS)"}}, isZero)},
	{Name: "enqueue-delay-unbounded", Contract: "C07", Rule: "A16-durations", Defect: "enqueue admits delay_ms up to 1e15 instead of 1e14, and the port passes the value to the script unchecked",
		Edits: []Edit{{"enqueue", "local delay = int(ARGV[3], 0, MAX_MS)", "local delay = int(ARGV[3], 0, 10 * MAX_MS)"}},
		Go:    uncheckedRange("enqueue", []Edit{{"enqueue", "local delay = int(ARGV[3], 0, MAX_MS)", "local delay = int(ARGV[3], 0, 10 * MAX_MS)"}}, pastMaxMS)},
	{Name: "lane-enqueue-delay-unbounded", Contract: "C07", Rule: "A16-durations", Defect: "lane_enqueue admits delay_ms up to 1e15 instead of 1e14, and the port passes the value to the script unchecked",
		Edits: []Edit{{"lane_enqueue", "local delay = int(ARGV[4], 0, MAX_MS)", "local delay = int(ARGV[4], 0, 10 * MAX_MS)"}},
		Go:    uncheckedRange("lane_enqueue", []Edit{{"lane_enqueue", "local delay = int(ARGV[4], 0, MAX_MS)", "local delay = int(ARGV[4], 0, 10 * MAX_MS)"}}, pastMaxMS)},
	{Name: "fail-any-token", Contract: "C07", Rule: "fenced", Defect: "fail does not compare the token: a zombie's fail buries the job another attempt holds",
		Edits: []Edit{{"fail", "if tonumber(f[2]) ~= token then", "if false then"}}},

	// §4.3-2: a port branches on the type, never on the message text.
	{Name: "complete-gone-taken-for-done", Contract: "C07", Rule: "fenced", Defect: "complete reads the message of its EMQSTALE and answers a refusal that says no such job as a success (a job that is gone must have been completed already): the port branches on the message text, not the type",
		Go: front(func(d drivers.Driver) drivers.Driver { return goneDoneFront{d} })},

	{Name: "complete-no-row-check", Contract: "C07", Rule: "fenced", Defect: "complete's fence does not first ask whether the row exists: a complete of a job that is gone fails in the script (a Lua error), not EMQSTALE",
		Edits: []Edit{{"complete", "  if not f[1] then return 'EMQSTALE ' .. id .. ' no such job' end\n", ""}}},
	{Name: "complete-no-state-check", Contract: "C07", Rule: "fenced", Defect: "complete's fence does not look at the row's state: a row in another state with a live entry in active is completed",
		Edits: []Edit{{"complete", "  if f[1] ~= 'active' then return 'EMQSTALE ' .. id .. ' is ' .. f[1] end\n", ""}}},

	// C14: the consumer's claim before its first park (A10), and a claiming batch before a
	// park (A17: it counts toward the no-polling bound).
	{Name: "park-before-first-claim", Contract: "C14", Rule: "park", Defect: "the park op's consumers wait for work before they look for any: the pool pops the wake key first and starts claiming only on a token, so a backlog whose token a consumer that died before claiming took waits for the next enqueue",
		Go: front(func(d drivers.Driver) drivers.Driver { return &parkFirstFront{Driver: d} })},
	{Name: "claim-batch-look-before-park", Contract: "C14", Rule: "park", Defect: "a worker that found its queue empty takes one last look with claim_batch (n 1) before each park, for work that came in meanwhile: a claim no wake asked for, which a port that counts only single-job claims takes for free",
		Go: claimBatchLook},
	// A4: in cluster mode a port reads the slot map (CLUSTER SHARDS, SLOTS, NODES, INFO, MYID)
	// and nothing else of CLUSTER.
	{Name: "cluster-keyslot-asked", Contract: "C01", Rule: "wire-commands", Cluster: true, Defect: "in cluster mode the port asks the seed CLUSTER KEYSLOT {emq}:bundle after its hello, to find the deployment keys' slot, instead of hashing the tag itself: a CLUSTER command outside the slot-map reads A4 lists",
		Go: front(func(d drivers.Driver) drivers.Driver { return keyslotFront{d} })},

	// C13: the replies the port protocol does not pass on, each "Reply: 1." (as lane-pause-replies-2).
	{Name: "pause-replies-2", Contract: "C13", Rule: "script-reply-discarded", Defect: "pause replies 2 instead of its documented 1",
		Edits: []Edit{{"pause", "return 1", "return 2"}}},
	{Name: "resume-replies-2", Contract: "C13", Rule: "script-reply-discarded", Defect: "resume replies 2 instead of its documented 1",
		Edits: []Edit{{"resume", "return 1", "return 2"}}},
	{Name: "lane-resume-replies-2", Contract: "C13", Rule: "script-reply-discarded", Defect: "lane_resume replies 2 instead of its documented 1",
		Edits: []Edit{{"lane_resume", "return 1", "return 2"}}},
	{Name: "lane-ceiling-replies-2", Contract: "C13", Rule: "script-reply-discarded", Defect: "lane_ceiling replies 2 instead of its documented 1",
		Edits: []Edit{{"lane_ceiling", "return 1", "return 2"}}},
	{Name: "checkpoint-replies-2", Contract: "C13", Rule: "script-reply-discarded", Defect: "checkpoint replies 2 instead of its documented 1",
		Edits: []Edit{{"checkpoint", "return 1", "return 2"}}},

	// Replies a port passes on.
	{Name: "retry-dead-replies-retried", Contract: "C10", Rule: "A8-retry-at-max", Defect: "retry at max attempts buries the job as fail does but replies retried",
		Edits: []Edit{{"retry", "return 'dead'", "return 'retried'"}}},
	{Name: "reap-count-flag", Contract: "C11", Rule: "reap", Defect: "reap answers 1 when it settled anything, not the count",
		Edits: []Edit{{"reap", "\nreturn n", "\nreturn math.min(n, 1)"}}},

	// C01: the fence's record.
	{Name: "fence-ignores-digest", Contract: "C01", Rule: "version", Defect: "the fence compares the deployed version alone: a deployment of the same version with another digest is answered ok",
		Edits: []Edit{{"fence", "if have[1] == version and have[2] == digest then return 'ok' end", "if have[1] == version then return 'ok' end"}}},
	{Name: "fence-installs-version-only", Contract: "C01", Rule: "version", Defect: "the fence installs the version alone, and takes a record without a digest for its own: {emq}:bundle never holds the digest",
		Edits: []Edit{{"fence", "redis.call('HSET', KEYS[1], 'version', version, 'digest', digest)", "redis.call('HSET', KEYS[1], 'version', version)"},
			{"fence", "if have[1] == version and have[2] == digest then return 'ok' end", "if have[1] == version and (have[2] == digest or not have[2]) then return 'ok' end"}}},

	// The pending set and the pause flag as the keyspace table says.
	{Name: "enqueue-pending-at-now", Contract: "C02", Rule: "pending-score-zero", Defect: "enqueue adds a ready id to pending at score TIME (in seconds), not 0",
		Edits: []Edit{{"enqueue", "redis.call('ZADD', KEYS[2], 0, id)", "redis.call('ZADD', KEYS[2], redis.call('TIME')[1], id)"}}},
	{Name: "pause-flag-true", Contract: "C06", Rule: "queue-pause", Defect: "pause writes meta.paused = true, and the claims read that word: paused is not 1 while the queue is paused",
		Edits: []Edit{{"pause", "redis.call('HSET', KEYS[1], 'paused', '1')", "redis.call('HSET', KEYS[1], 'paused', 'true')"},
			{"claim", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end", "if redis.call('HGET', KEYS[3], 'paused') == 'true' then return {} end"},
			{"lane_claim", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end", "if redis.call('HGET', KEYS[3], 'paused') == 'true' then return {} end"},
			{"claim_batch", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end", "if redis.call('HGET', KEYS[3], 'paused') == 'true' then return {} end"}}},

	// C03: a batch's repeated id, which enqueue_batch's reply and L-46 settle (the first wins).
	{Name: "enqueue-batch-repeat-wins", Contract: "C03", Rule: "A17-enqueue-batch", Defect: "enqueue_batch writes a repeated id again and answers 1 for it: the last occurrence in the batch wins, not the first",
		Edits: []Edit{{"enqueue_batch", "if seen[id] or (some and redis.call('EXISTS', row) == 1) then", "if not seen[id] and some and redis.call('EXISTS', row) == 1 then"}}},

	// C06: claim_batch's one TIME (L-43).
	{Name: "claim-batch-staggered-leases", Contract: "C06", Rule: "A17-claim-batch", Defect: "claim_batch staggers its leases, the k-th claimed job's deadline TIME + lease_ms + k seconds, instead of one TIME + lease_ms for the whole batch",
		Edits: []Edit{{"claim_batch", "    leases[#leases + 1] = deadline\n", "    leases[#leases + 1] = deadline + 1000 * #out\n"}}},

	// C12: lane_claim's fifth element (A3), the lane the claimed job came from.
	{Name: "lane-claim-replies-lane-key", Contract: "C12", Rule: "lanes", Defect: "lane_claim replies the lane's key (emq:{q}:lane:<g>) as its fifth element, not the lane's name",
		Edits: []Edit{{"lane_claim", "return {id, f[2], attempts, saved, g}", "return {id, f[2], attempts, saved, lane}"}}},

	// The field ranges of the batch ops and lane_ceiling (Part B), each in its owner's fields
	// clause: the port's JSON layer passes the value to the widened script unchecked.
	{Name: "claim-batch-lease-zero", Contract: "C06", Rule: "field-range", Defect: "claim_batch admits lease_ms 0, and the port passes the value to the script unchecked",
		Edits: claimBatchLeaseZero, Go: uncheckedField("claim_batch", "lease_ms", claimBatchLeaseZero, 99_999_999_000_000, isZero)},
	{Name: "claim-batch-n-unbounded", Contract: "C06", Rule: "field-range", Defect: "claim_batch admits n up to 10000 instead of 1000, and the port passes the value to the script unchecked",
		Edits: claimBatchN, Go: uncheckedField("claim_batch", "n", claimBatchN, 900, func(v int64) bool { return v > 1000 && v <= 10000 })},
	{Name: "enqueue-batch-delay-unbounded", Contract: "C02", Rule: "field-range", Defect: "enqueue_batch admits a job's delay_ms up to 1e15 instead of 1e14, and the port passes the value to the script unchecked",
		Edits: enqueueBatchDelay, Go: uncheckedField("enqueue_batch", "jobs[].delay_ms", enqueueBatchDelay, 99_999_999_000_000, pastMaxMS)},
	{Name: "lane-ceiling-unbounded", Contract: "C13", Rule: "field-range", Defect: "lane_ceiling admits a ceiling up to 1e14 instead of 1e9, and the port passes the value to the script unchecked",
		Edits: laneCeilingWide, Go: uncheckedField("lane_ceiling", "ceiling", laneCeilingWide, 999_000_000, func(v int64) bool { return v > 1_000_000_000 && v <= bus.MaxMS })},
}

// The widened ranges of the batch ops and lane_ceiling.
var (
	claimBatchLeaseZero = []Edit{{"claim_batch", "local lease = int(ARGV[1], 1, MAX_MS)", "local lease = int(ARGV[1], 0, MAX_MS)"}}
	claimBatchN         = []Edit{{"claim_batch", "local n = int(ARGV[2], 1, 1000)", "local n = int(ARGV[2], 1, 10000)"}}
	enqueueBatchDelay   = []Edit{{"enqueue_batch", "local delay = int(ARGV[3 * k], 0, MAX_MS)", "local delay = int(ARGV[3 * k], 0, 10 * MAX_MS)"}}
	laneCeilingWide     = []Edit{{"lane_ceiling", "local n = int(ARGV[2], 0, 1000000000)", "local n = int(ARGV[2], 0, 100000000000000)"}}
)

// isZero and pastMaxMS tell the values a widened range admits that the bus refuses.
func isZero(v int64) bool    { return v == 0 }
func pastMaxMS(v int64) bool { return v > bus.MaxMS && v <= 10*bus.MaxMS }
