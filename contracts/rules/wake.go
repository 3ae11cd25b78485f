package rules

// The wake token's duties (A13) and the parking consumer (A10), one rule per duty, each quoting
// where it is written. Arming means: the list ends the op holding exactly one token when it was
// empty before; "must not arm" means it stays empty.
var (
	WakeEnqueue     = Rule{"A13-wake-enqueue", `canon §4.2 enqueue: "with delay_ms 0 the id goes to pending (score 0), else to scheduled at TIME + delay; arms the wake" (both branches arm); "if the row exists, changes nothing"; A13: "Which scripts arm the wake? … enqueue"`}
	WakeLaneEnqueue = Rule{"A13-wake-lane-enqueue", `A13: "Which scripts arm the wake? … enqueue, lane_enqueue" (a delayed lane job too, as enqueue); a duplicate id changes nothing`}
	WakeRetry       = Rule{"A13-wake-retry", `canon §4.2 retry: "otherwise back to pending (delay 0) or scheduled at TIME + delay, the error kept as the last error, wake armed"; "if attempts ≥ max_attempts exactly as fail" (fail does not arm unless a lane rejoins); A13: "retry (retried)"`}
	WakeReap        = Rule{"A13-wake-reap", `A13: "reap and promote (when they moved a job where a claim takes it, not a reap that only buried jobs in the morgue)": a reap that returned a lease to pending arms, a reap that moved nothing or only buried does not`}
	WakePromote     = Rule{"A13-wake-promote", `A13: "reap and promote (when they moved a job where a claim takes it, not a reap that only buried jobs in the morgue)": a promote that moved a due job arms, one that moved nothing does not`}
	WakeRevive      = Rule{"A13-wake-revive", `A13: "Which scripts arm the wake? … revive" (revive returns the job to pending or its lane, A15); a revive of an id not in the morgue changes nothing`}
	WakeResume      = Rule{"A13-wake-resume", `A13: "Which scripts arm the wake? … resume": work waiting behind a queue pause, plain pending ids or ring lanes, wakes a parked consumer when the pause lifts`}
	WakeLaneResume  = Rule{"A13-wake-lane-resume", `A13: "lane_resume … arm it when a lane rejoins the ring"`}
	WakeLaneCeiling = Rule{"A13-wake-lane-ceiling", `A13: "… lane_ceiling arm it when a lane rejoins the ring (a consumer parked while every lane sat at its ceiling must wake when one reopens)" — a raise or a removal that reopens the lane arms, one that closes it does not`}
	WakeRejoin      = Rule{"A13-wake-rejoin", `A13: "complete, fail, retry, reap … arm it when a lane rejoins the ring (a consumer parked while every lane sat at its ceiling must wake when one reopens)"`}
	WakeClaimRearm  = Rule{"A13-wake-claim-rearm", `canon §4.2 claim: "re-arms the wake while work remains"; A13: "both claims re-arm while plain pending ids or ring lanes remain"`}
	WakeLaneRearm   = Rule{"A13-wake-lane-claim-rearm", `A13: "both claims re-arm while plain pending ids or ring lanes remain" — lane_claim included, for plain pending ids too`}
	WakeEmptyClaim  = Rule{"A13-wake-empty-claim", `A13: "An empty claim never arms." (an empty reply, paused queue included: a paused queue must not spin its parked consumers)`}
	WakeOne         = Rule{"A10-wake-one", `A10: "the wake list holds at most one element; arming is RPUSH only when LLEN is 0, inside the script"`}
)

// rulesWake are the rules of the wake token's duties and parking (C14).
// The consumer's host-side duties (claim first, a timed-out pop parks again without claiming)
// are checked under Park, whose host mutants live with the bus.
var rulesWake = []Rule{ParkPop, WakeEnqueue, WakeLaneEnqueue, WakeRetry, WakeReap, WakePromote,
	WakeRevive, WakeResume, WakeLaneResume, WakeLaneCeiling, WakeRejoin,
	WakeClaimRearm, WakeLaneRearm, WakeEmptyClaim, WakeOne}

// ParkPop: a parked consumer's pop waits park_ms, the fraction of a second kept (parking.go).
var ParkPop = Rule{"park-pop-timeout", `contracts/PROTOCOL.md Part B park: "park_ms is each pop's wait: a parked consumer's BLPOP times out after park_ms, its timeout argument park_ms/1000 seconds with the fraction kept, or after what is left of timeout_ms when that is less"`}
