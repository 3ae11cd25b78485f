package contracts

import . "github.com/onsi/ginkgo/v2"

// Register defines the fourteen contracts' specs for cfg. Call it once, before RunSpecs. One
// top-level container keeps the canon's order (Ginkgo shuffles only top-level containers).
func Register(cfg *Config) bool {
	_, ok := register(cfg)
	return ok
}

// register is Register, returning the ledger the clauses write their verdicts to.
func register(cfg *Config) (*ledger, bool) {
	led := newLedger()
	ok := Describe("EchoMQ conformance", func() {
		for _, c := range all {
			Describe(c.Title(), Label(c.ID), func() {
				sp := spec{cfg: cfg, c: c, led: led}
				c.specs(sp)
				for _, w := range walks() {
					if w.contract == c.ID {
						sp.clause(w.name, clauseOpts{}, w.body)
					}
				}
			})
		}
	})
	return led, ok
}

// spec registers one contract's clauses.
type spec struct {
	cfg *Config
	c   Contract
	led *ledger
}
