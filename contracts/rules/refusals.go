package rules

// rulesRefusals are the rules of the key builder's refusals, duplicates, bytes on the claim path, the token fence (C03, C04, C06, C07, C08).
var rulesRefusals = []Rule{LargestBytes,
	DupLane, DupWake, ClaimBytes, ClaimCheckpointBytes,
	FencedToken, FencedLease, FencedNoChange,
	RangeDuration, RangeMaxAttempts, RangeLimit,
	ExtendReply, CompleteLane, CompleteError, ClaimExact,
}

var (
	DupLane              = Rule{"dup-lane-enqueue", `contracts/PROTOCOL.md enqueue: "created: false for a duplicate (nothing changed). With lane: the lane enqueue script" — canon §4.2 enqueue: "if the row exists, changes nothing (idempotent by id)", whatever lane or delay the second enqueue names`}
	DupWake              = Rule{"dup-no-wake", `canon §4.2 enqueue: "if the row exists, changes nothing" — the wake included: only a new row arms the wake`}
	ClaimBytes           = Rule{"claim-payload-bytes", `canon §1.5: "A job carries its id and an opaque payload"; contracts/PROTOCOL.md claim/lane_claim: reply "payload_b64" — the exact bytes enqueued (0x00, 0x80–0xFF, invalid UTF-8, empty, 64 KiB), and the row's payload field holds them`}
	ClaimCheckpointBytes = Rule{"claim-checkpoint-bytes", `contracts/PROTOCOL.md A3: "claim and lane_claim reply a fourth element: the checkpoint bytes of the earlier attempt, or a nil bulk when there is none"`}
	FencedToken          = Rule{"fenced-token", `canon §4.1: "refused with EMQSTALE unless … its attempts equals the token" — a token below or above the live one is refused by every fenced op`}
	FencedLease          = Rule{"fenced-lease", `canon §4.1: "refused with EMQSTALE unless … its lease has not passed: its score in active is strictly greater than server TIME in ms … An expired lease gives no rights even before the reaper has run"`}
	FencedNoChange       = Rule{"fenced-refusal-changes-nothing", `canon §4.1: "A refused op changes nothing, byte for byte" — not the row, not the last error, not the checkpoint, not a lease`}
	RangeDuration        = Rule{"A16-durations", `contracts/PROTOCOL.md A16: "durations (lease_ms 1..1e14, delay_ms 0..1e14) … anything else is EMQARG and changes nothing" — both edges of each range are accepted`}
	RangeMaxAttempts     = Rule{"A16-max-attempts", `contracts/PROTOCOL.md A16: "max_attempts 1..1e9 … anything else is EMQARG and changes nothing"`}
	RangeLimit           = Rule{"A16-limit", `contracts/PROTOCOL.md A16: "limit 1..10000 … anything else is EMQARG and changes nothing"`}
	ExtendReply          = Rule{"extend-deadline", `canon §4.2 extend: "fenced; moves the deadline to TIME + lease_ms"; reply "the new deadline, ms" — the new deadline is the server's TIME of the extend plus lease_ms (not the old deadline plus lease_ms), and the reply deadline_ms is that score`}
	CompleteLane         = Rule{"complete-lane", `canon §4.2 complete: "deletes the row, the active entry, the checkpoint, the last error and the lane bookkeeping (laneof, the lane's active count)" — for a lane job: its laneof entry and its count in active:<g>`}
	CompleteError        = Rule{"complete-error", `canon §4.2 complete: "deletes … the last error" — the error a retry left is gone after the redelivery completes`}
)

// LargestBytes: the largest job travels like any other (largest.go).
var LargestBytes = Rule{"largest-bytes", `contracts/PROTOCOL.md Part B: "A job whose payload and checkpoint together hold up to 2 MiB travels like any other (its base64 makes a request or a reply line of about 3 MiB): a port reads request lines of at least 4 MiB"`}

// ClaimExact is claim's effect and nothing more.
var ClaimExact = Rule{"claim-exact", `canon §4.2 claim: "pops the oldest pending id, adds 1 to attempts, sets active, puts the id in active at TIME + lease_ms; re-arms the wake while work remains" — and nothing else: the checkpoint and last error of an earlier attempt stay (A3: removed only by complete and purge), no other key changes`}
