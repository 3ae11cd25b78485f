package mutant

// c05 are the mutants contract C05 must kill: a Lua edit of claim, and defects of the minter's
// clock handling (the reference minter hooked, driven through the port protocol's clock op).
var c05 = []Spec{
	{Name: "claim-newest", Contract: "C05", Rule: "mint-order", Defect: "claim pops the newest pending id (ZPOPMAX)",
		Edits: []Edit{{"claim", "redis.call('ZRANGE', KEYS[1], 0, 0)", "redis.call('ZRANGE', KEYS[1], -1, -1)"},
			{"claim", "redis.call('ZPOPMIN', KEYS[1])", "redis.call('ZPOPMAX', KEYS[1])"}}},
	{Name: "clock-step-back-minted", Contract: "C05", Rule: "A11-clock-steps-back", Defect: "a clock that steps back is minted from as read: the next id is smaller",
		Go: faulty(minterDefects{StepBack: true})},
	{Name: "sequence-wraps", Contract: "C05", Rule: "A11-sequence-overflow", Defect: "past 4095 ids in one millisecond the sequence wraps to 0 instead of waiting for the next millisecond",
		Go: faulty(minterDefects{SeqWrap: true})},
	{Name: "sequence-carries", Contract: "C05", Rule: "A11-sequence-overflow", Defect: "past 4095 ids in one millisecond the sequence carries into the worker bits",
		Go: faulty(minterDefects{SeqCarry: true})},
	{Name: "sequence-borrows", Contract: "C05", Rule: "A11-sequence-overflow", Defect: "past 4095 ids in one millisecond the minter moves to the next millisecond at once instead of waiting for its clock: ids ahead of the clock",
		Go: faulty(minterDefects{SeqBorrow: true})},
	{Name: "clock-last-ms-refused", Contract: "C05", Rule: "clock-last-ms", Defect: "a mint while the minter's clock reads the last millisecond a snowflake holds (2⁴²−1) answers INTERNAL instead of its ids",
		Go: faulty(minterDefects{EndEarly: true})},
}
