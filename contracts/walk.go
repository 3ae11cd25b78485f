package contracts

import "github.com/echomq/kit/contracts/internal/model"

// The model-checked walks, each the last clause of the contract that owns its ops. Each runs a
// few seeded runs of 40–50 steps on fresh queues, its op table weighted toward the ops its
// contract owns; Config.Seed replays a failing run.
var (
	walkPlain  = walkSpec{seed: 6001, runs: 3, steps: 50, mix: model.PlainMix, rules: walkPlainRules}
	walkMorgue = walkSpec{seed: 10001, runs: 3, steps: 50, mix: model.MorgueMix, rules: walkLaneRules}
	walkRetry  = walkSpec{seed: 9001, runs: 2, steps: 40, mix: model.RetryMix, rules: walkLaneRules}
	walkReap   = walkSpec{seed: 11001, runs: 2, steps: 40, mix: model.ReapMix, rules: walkLaneRules}
	walkLimits = walkSpec{seed: 13001, runs: 2, steps: 40, mix: model.LimitMix, rules: walkLaneRules}
	walkLanes  = walkSpec{seed: 12001, runs: 4, steps: 50, mix: model.LaneMix, rules: walkLaneRules}
)

// The rules a walk evaluates: every op's, and with lanes the lanes' too.
var (
	walkPlainRules = []Rule{ruleWalkModel, ruleEnqueue, ruleClaim, ruleExtend, ruleComplete, ruleRetry, ruleFail,
		ruleCheckpoint, ruleReap, rulePromote, ruleMorgue, ruleWalkRevive, ruleQueuePause, ruleFenced, ruleWake, ruleIDs, ruleMintOrder}
	walkLaneRules = append([]Rule{ruleLanes, ruleCeiling, ruleWalkLaneReturn, ruleWalkLaneCount}, walkPlainRules...)
)
