package contracts

// walkClause is a model-checked walk registered as a clause of the contract that owns its ops.
type walkClause struct {
	contract, name string
	body           func(t *T)
}

// walks lists the model-checked walks; Register adds each to its contract after the contract's
// own clauses, so clause ids stay stable.
func walks() []walkClause { return nil }
