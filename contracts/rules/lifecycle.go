package rules

// The lifecycle rules, one per canon sentence or Part A choice that C09, C10 and C11 check.
var (
	CkptRead           = Rule{"A3-ckpt-read", `contracts/PROTOCOL.md A3: "claim and lane_claim reply a fourth element: the checkpoint bytes of the earlier attempt, or a nil bulk when there is none"`}
	CkptRetry          = Rule{"A3-ckpt-survives-retry", `contracts/PROTOCOL.md A3: "The checkpoint survives retry and reap" (retry with delay 0, and with a delay then promote)`}
	CkptReap           = Rule{"A3-ckpt-survives-reap", `contracts/PROTOCOL.md A3: "The checkpoint survives retry and reap"`}
	CkptRemoved        = Rule{"A3-ckpt-removed", `contracts/PROTOCOL.md A3: "The checkpoint … is removed by complete and purge"`}
	CkptReplace        = Rule{"ckpt-current-attempt", `canon §2.2 / §4.2: "emq:{q}:ckpt | hash | id → checkpoint bytes written by the current or an earlier attempt"; "checkpoint | fenced; stores bytes in ckpt for the job" (a new checkpoint replaces the old)`}
	CkptBytes          = Rule{"A3-ckpt-bytes", `canon §4.2 checkpoint: "stores bytes in ckpt for the job"; contracts/PROTOCOL.md Part B: "Bytes travel as standard base64 with padding in fields named *_b64" (0x00, 0x80–0xFF and invalid UTF-8 come back exactly)`}
	RetryScheduled     = Rule{"retry-delay-scheduled", `canon §4.2 retry: "otherwise back to pending (delay 0) or scheduled at TIME + delay"; §2.2: "emq:{q}:scheduled | zset | delayed or backed-off ids; score = when they are due, server ms"; §1.4: due times come from TIME (TIME+delay_ms)`}
	RetryPending       = Rule{"retry-zero-delay-pending", `canon §4.2 retry: "back to pending (delay 0)"; §2.2: "emq:{q}:pending | zset | ids ready to claim; every score is 0"`}
	RetryError         = Rule{"retry-keeps-error", `canon §4.2 retry: "the error kept as the last error"; A15: "retry and fail keep the last error in errors"`}
	RetryWake          = Rule{"retry-arms-wake", `canon §4.2 retry: "wake armed"; §4.5: "retry (when retried) … arm it"; A13: "retry (retried)"`}
	RetryAtMax         = Rule{"A8-retry-at-max", `contracts/PROTOCOL.md A8: "attempts ≥ max_attempts → exactly the effect of fail with the given error; reply dead" (and below it: retried)`}
	PromoteDue         = Rule{"promote-due-only", `canon §4.2 promote: "every id in scheduled due ≤ TIME (up to limit) goes to pending or its lane" (a job due later stays scheduled)`}
	PromoteLimit       = Rule{"promote-limit", `contracts/PROTOCOL.md Part B promote: "optional limit (default 1000)"; lua promote: "A bounded scan" (at most limit ids move)`}
	PromoteCount       = Rule{"promote-count", `canon §4.2 promote: reply "the count"`}
	PromoteWake        = Rule{"promote-arms-when-moved", `contracts/PROTOCOL.md A13: "reap and promote (when they moved a job where a claim takes it, not a reap that only buried jobs in the morgue)" arm the wake; an idle promote leaves it empty`}
	FailDeath          = Rule{"fail-dead-at-time", `canon §4.2 fail: "fenced; state dead, into dead at TIME, the error kept as the last error"; §2.2: "emq:{q}:dead | zset | the morgue; score = time of death, server ms"`}
	MorgueTies         = Rule{"morgue-tie-order", `contracts/PROTOCOL.md Part B morgue: "deaths in the same millisecond (a reap buries many at one server TIME) in id order"`}
	MorgueOp           = Rule{"morgue-op", `contracts/PROTOCOL.md Part B morgue: "optional limit (default 100) | jobs: id, attempts, payload_b64, error, died_ms, oldest death first"; "reads only"`}
	ReviveClears       = Rule{"A15-revive-clears-error", `contracts/PROTOCOL.md A15: of the last error, "revive clears it and returns the job (attempts intact) to pending or its lane"`}
	ReviveWake         = Rule{"A13-revive-arms", `contracts/PROTOCOL.md A13: "Which scripts arm the wake? … revive"`}
	NotDead            = Rule{"revive-purge-not-dead", `contracts/PROTOCOL.md Part B revive, purge: result "changed", "false when the id is not dead" (and nothing changes)`}
	PurgeRemoves       = Rule{"A15-purge-removes", `contracts/PROTOCOL.md A15: "purge removes row, error, checkpoint and lane membership"; canon §4.2 purge: "a dead job gone for good: row, dead entry, error, checkpoint, laneof"`}
	ReapExpired        = Rule{"reap-expired-only", `canon §4.2 reap: "every id in active whose deadline ≤ TIME" (a live lease is untouched)`}
	ReapLimit          = Rule{"reap-limit", `contracts/PROTOCOL.md Part B reap: "optional limit (default 1000)"; lua reap: "A bounded scan of at most limit ids"`}
	ReapReturn         = Rule{"reap-back-to-pending", `canon §4.2 reap: "otherwise it returns to pending or its lane; attempts unchanged"; reply "the count"; §2.2: pending "every score is 0"`}
	ReapDead           = Rule{"reap-dead-lease-expired", `canon §4.2 reap: "at max_attempts or more it dies with the error lease expired"; §2.2: "emq:{q}:dead | zset | the morgue; score = time of death, server ms"`}
	ReapWake           = Rule{"reap-arms-when-moved", `contracts/PROTOCOL.md A13: "reap and promote (when they moved a job where a claim takes it, not a reap that only buried jobs in the morgue)" arm the wake; an idle reap leaves it empty`}
	StaleCheckpoint    = Rule{"fenced-checkpoint", `canon §4.1: "every op on a claimed job (complete, retry, fail, extend, checkpoint) names (id, token). Such an op is refused with EMQSTALE unless … its attempts equals the token … A refused op changes nothing, byte for byte" (a zombie's checkpoint does not overwrite the new holder's)`}
	CompleteRemovesAll = Rule{"complete-after-retry", `canon §4.2 complete: "deletes the row, the active entry, the checkpoint, the last error and the lane bookkeeping" (after a retry left an error and a checkpoint)`}
)

// rulesLifecycle are the rules of retry, promote, fail, the morgue, reap and the checkpoint (C09, C10, C11).
var rulesLifecycle = []Rule{CkptRead, CkptRetry, CkptReap, CkptRemoved, CkptReplace, CkptBytes,
	RetryScheduled, RetryPending, RetryError, RetryWake, RetryAtMax,
	PromoteDue, PromoteLimit, PromoteCount, PromoteWake,
	FailDeath, MorgueOp, MorgueTies, ReviveClears, ReviveWake, NotDead, PurgeRemoves,
	ReapExpired, ReapLimit, ReapReturn, ReapDead, ReapWake, StaleCheckpoint, CompleteRemovesAll}
