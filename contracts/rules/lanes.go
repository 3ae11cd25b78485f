package rules

// The lane rules, one per sentence of canon §4 Lanes / the Part A choice a clause checks.
var (
	RingTail        = Rule{"A14-ring-tail-rejoin", `contracts/PROTOCOL.md A14: "a lane that becomes serviceable is appended at the tail" — canon §4.4: "a lane that becomes serviceable again (an enqueue, … revive into the lane, … retry or reap that frees a slot, …) is appended at the tail"`}
	RingPlace       = Rule{"A14-ring-keeps-place", `contracts/PROTOCOL.md A14: "a lane already in the ring keeps its place (membership by LPOS)"`}
	ActiveZero      = Rule{"A14-active-deleted-at-zero", `contracts/PROTOCOL.md A14: "active:<g> is deleted when it reaches 0, so a finished lane leaves no count"`}
	LaneCount       = Rule{"lanes-claim-counts-active", `canon §4.4: "A lane claim takes the lane at the head of the ring, moves it to the tail, pops that lane's oldest id, and counts it in active:<g> … a lane that stops being serviceable leaves it"`}
	LaneRetry       = Rule{"lanes-retry-to-lane", `canon §4.2 retry / A7: "back to pending (delay 0) or scheduled" — a lane job's pending is its lane; the retry releases the lane's active count and the lane rejoins the ring`}
	LanePromote     = Rule{"lanes-promote-to-lane", `canon §4.2 promote: "every id in scheduled due ≤ TIME (up to limit) goes to pending or its lane" — a promoted lane job rejoins its lane and the lane the ring`}
	LaneReap        = Rule{"lanes-reap-to-lane", `canon §4.2 reap: "at max_attempts or more it dies with the error lease expired, otherwise it returns to pending or its lane"; A7: the reap releases the lane's active count`}
	LaneFail        = Rule{"lanes-fail-releases", `canon §4.2 fail: "state dead, into dead at TIME" — A7: the fail releases the lane's active count; laneof stays until purge (A15)`}
	LaneRevive      = Rule{"lanes-revive-to-lane", `contracts/PROTOCOL.md A15: "revive … returns the job (attempts intact) to pending or its lane"`}
	LanePurge       = Rule{"lanes-purge-laneof", `contracts/PROTOCOL.md A15: "purge removes row, error, checkpoint and lane membership"`}
	LaneComplete    = Rule{"lanes-complete-bookkeeping", `canon §4.2 complete: "deletes the row, the active entry, the checkpoint, the last error and the lane bookkeeping (laneof, the lane's active count)"`}
	Churn           = Rule{"lanes-churn-bound", `canon §4.4: "with N serviceable lanes, a lane with work waits at most N−1 lane claims" — while other lanes drain and refill`}
	CeilingBoundary = Rule{"A7-ceiling-boundary", `contracts/PROTOCOL.md A7: "lane_ceiling n: n ≥ 1 limits the lane's active count to n" — n claims succeed, the n+1st answers empty`}
	CeilingZero     = Rule{"A7-ceiling-zero-removes", `contracts/PROTOCOL.md A7: "n = 0 removes the ceiling"`}
	CeilingLowered  = Rule{"A7-ceiling-lowered-leaves", `contracts/PROTOCOL.md A7: "A lane at its ceiling leaves the ring" — also when the ceiling is lowered to or below its active count`}
	CeilingRejoin   = Rule{"A7-ceiling-rejoin-on-release", `contracts/PROTOCOL.md A7: "A lane at its ceiling leaves the ring and rejoins on the complete, retry, fail or reap that brings it below"`}
	CeilingRaise    = Rule{"A7-ceiling-raise-rejoins", `canon §4.4: "a lane that becomes serviceable again (… a raised … ceiling) is appended at the tail, and a lane already in the ring keeps its place"; A13: "… lane_ceiling arm it when a lane rejoins the ring"`}
	RejoinWake      = Rule{"lanes-A13-rejoin-arms-wake", `contracts/PROTOCOL.md A13: "complete, fail, retry, reap, lane_resume, lane_ceiling arm it when a lane rejoins the ring (a consumer parked while every lane sat at its ceiling must wake when one reopens)"`}
	ClaimRearm      = Rule{"lanes-A13-claim-rearms", `contracts/PROTOCOL.md A13: "both claims re-arm while plain pending ids or ring lanes remain … An empty claim never arms"`}
	LanePauseRing   = Rule{"lanes-pause-leaves-ring", `canon §4.4: "The ring (emq:{q}:ring) holds exactly the serviceable lanes — a lane is serviceable when it has pending ids, is not paused" — C13: "a paused lane keeps its backlog and leaves the ring"`}
	LaneResume      = Rule{"lanes-resume-rejoins", `C13: "a resume returns it" — A14: appended at the tail; A13: "lane_resume … arm it when a lane rejoins the ring"`}
	QueuePauseLane  = Rule{"A6-pause-lane-claim", `contracts/PROTOCOL.md A6: "meta.paused = 1 makes claim and lane_claim answer empty, inside the claim script"`}
	QueuePauseRing  = Rule{"A6-pause-ring-untouched", `contracts/PROTOCOL.md A6: "Lane state is kept; the ring is not touched"`}
)

// ScriptReply: the scripts whose reply the port protocol does not pass on reply as their headers say.
var ScriptReply = Rule{"script-reply-discarded", `lane_pause.lua: "Reply: 1."; lane_resume.lua, lane_ceiling.lua, pause.lua, resume.lua, checkpoint.lua, complete.lua and fail.lua likewise — replies the port protocol does not pass on, which the kit reads by sending the port's own (idempotent) call again, or, for complete and fail, the port's call made for a twin job claimed beside the port's`}

// rulesLanes are the rules of the lanes: ring order, rotation, ceilings and pauses through every transition (C12, C13).
var rulesLanes = []Rule{RingTail, RingPlace, ActiveZero, LaneCount, LaneRetry, LanePromote,
	LaneReap, LaneFail, LaneRevive, LanePurge, LaneComplete, Churn, CeilingBoundary,
	CeilingZero, CeilingLowered, CeilingRejoin, CeilingRaise, RejoinWake, ClaimRearm, LanePauseRing,
	LaneResume, QueuePauseLane, QueuePauseRing, ScriptReply}
