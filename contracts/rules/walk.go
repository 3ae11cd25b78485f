package rules

// The model-checked walk's own rules: the state table as a whole, and the Part A choices whose
// effect only shows after a path of several ops (a lane job back through retry or promote, a
// revived job's last error). The walk also evaluates the table's per-op rules (rules.go).
var (
	WalkModel      = Rule{"walk-model", `canon §4.1: "state is one of pending, scheduled, active, dead; a completed job leaves nothing behind at all" — every op, from every state, has exactly its row's effect in the state table, on the reply and on the whole queue keyspace (the model-checked walk)`}
	WalkRevive     = Rule{"walk-revive", `contracts/PROTOCOL.md A15: of the last error, "revive clears it and returns the job (attempts intact) to pending or its lane"`}
	WalkLaneReturn = Rule{"walk-lane-return", `canon §4.2 promote: "every id in scheduled due ≤ TIME (up to limit) goes to pending or its lane"; reap: "otherwise it returns to pending or its lane" — a lane job returns to its lane on every path back (retry, reap, promote, revive) and its lane rejoins the ring`}
	WalkLaneCount  = Rule{"walk-lane-count", `contracts/PROTOCOL.md A14: "active:<g> is deleted when it reaches 0, so a finished lane leaves no count"; A7: "A lane at its ceiling leaves the ring and rejoins on the complete, retry, fail or reap that brings it below"`}
)

// rulesWalk are the rules of the model-checked walk over every op.
var rulesWalk = []Rule{WalkModel, WalkRevive, WalkLaneReturn, WalkLaneCount}
