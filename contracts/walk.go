package contracts

// walkClause is a model-checked walk registered as a clause of the contract that owns its ops.
type walkClause struct {
	contract, name string
	body           func(t *T)
}

// The op tables of the walks: each kind with its weight.
var (
	walkPlainOps = []wkind{{"enqueue", 5}, {"claim", 5}, {"extend", 1}, {"complete", 3}, {"retry", 3},
		{"fail", 1}, {"checkpoint", 3}, {"reap", 1}, {"promote", 2}, {"morgue", 1}, {"revive", 1},
		{"purge", 1}, {"pause", 1}, {"resume", 3}, {"wait", 1}, {"drain", 2}}
	walkMorgueOps = []wkind{{"enqueue", 2}, {"lane_enqueue", 4}, {"claim", 2}, {"lane_claim", 4},
		{"complete", 1}, {"retry", 3}, {"fail", 3}, {"checkpoint", 1}, {"reap", 2}, {"promote", 1},
		{"morgue", 2}, {"revive", 3}, {"purge", 2}, {"wait", 2}, {"lane_ceiling", 1}, {"lane_resume", 1}, {"drain", 2}}
	walkLaneOps = []wkind{{"lane_enqueue", 6}, {"lane_claim", 7}, {"enqueue", 1}, {"claim", 1},
		{"extend", 1}, {"complete", 3}, {"retry", 3}, {"fail", 2}, {"checkpoint", 1}, {"reap", 1},
		{"promote", 2}, {"morgue", 1}, {"revive", 2}, {"purge", 1}, {"lane_pause", 2},
		{"lane_resume", 3}, {"lane_ceiling", 1}, {"pause", 1}, {"resume", 3}, {"wait", 1}, {"drain", 3}}
	walkRetryOps = []wkind{{"enqueue", 3}, {"lane_enqueue", 2}, {"claim", 3}, {"lane_claim", 2},
		{"retry", 6}, {"checkpoint", 2}, {"complete", 1}, {"promote", 4}, {"wait", 2}, {"drain", 2}}
	walkReapOps = []wkind{{"enqueue", 3}, {"lane_enqueue", 2}, {"claim", 4}, {"lane_claim", 2},
		{"checkpoint", 2}, {"extend", 1}, {"complete", 1}, {"reap", 5}, {"wait", 2}, {"revive", 1},
		{"lane_ceiling", 1}, {"drain", 2}}
	walkLimitOps = []wkind{{"lane_enqueue", 5}, {"enqueue", 1}, {"lane_claim", 6}, {"claim", 1},
		{"complete", 2}, {"retry", 2}, {"fail", 1}, {"reap", 1}, {"wait", 1}, {"pause", 2},
		{"resume", 3}, {"lane_pause", 3}, {"lane_resume", 3}, {"lane_ceiling", 4}, {"drain", 3}}
	walkLanes = []string{"a", "b", "c"}
)

// walks lists the model-checked walks; Register adds each to its contract after the contract's
// own clauses, so clause ids stay stable. Each runs a few seeded runs of 40–50 steps on fresh
// queues, its op table weighted toward the ops its contract owns; Config.Seed replays a failing run.
func walks() []walkClause {
	plain := []Rule{ruleWalkModel, ruleEnqueue, ruleClaim, ruleExtend, ruleComplete, ruleRetry, ruleFail,
		ruleCheckpoint, ruleReap, rulePromote, ruleMorgue, ruleWalkRevive, ruleQueuePause, ruleFenced, ruleWake, ruleIDs, ruleMintOrder}
	lanes := append([]Rule{ruleLanes, ruleCeiling, ruleWalkLaneReturn, ruleWalkLaneCount}, plain...)
	return []walkClause{
		{"C06", "walk-plain", walkSpec{seed: 6001, runs: 3, steps: 50, kinds: walkPlainOps, rules: plain}.body},
		{"C10", "walk-morgue", walkSpec{seed: 10001, runs: 3, steps: 50, kinds: walkMorgueOps, lanes: walkLanes[:2], rules: lanes}.body},
		{"C09", "walk-retry", walkSpec{seed: 9001, runs: 2, steps: 40, kinds: walkRetryOps, lanes: walkLanes[:2], rules: lanes}.body},
		{"C11", "walk-reap", walkSpec{seed: 11001, runs: 2, steps: 40, kinds: walkReapOps, lanes: walkLanes[:2], rules: lanes}.body},
		{"C13", "walk-limits", walkSpec{seed: 13001, runs: 2, steps: 40, kinds: walkLimitOps, lanes: walkLanes, rules: lanes}.body},
		{"C12", "walk-lanes", walkSpec{seed: 12001, runs: 4, steps: 50, kinds: walkLaneOps, lanes: walkLanes, rules: lanes}.body},
	}
}
