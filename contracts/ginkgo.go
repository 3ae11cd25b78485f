package contracts

import (
	"time"

	"github.com/echomq/kit/contracts/verdict"
	"github.com/onsi/ginkgo/v2"
)

// This file is the one of the suite that knows Ginkgo: it turns the table into specs. Every spec
// runs its clause through runClause and mirrors the typed verdict to Ginkgo (a failure, a skip),
// so Ginkgo's reporters, its labels and focus, and its fail-fast see the clauses as they are.

// Register defines every clause of a run on cfg as a Ginkgo spec, for a port's own Ginkgo suite:
// call it once before RunSpecs, and select with Ginkgo's own flags (-ginkgo.label-filter=C09,
// -ginkgo.focus=<clause id>).
func Register(cfg *Config) bool {
	return describe(cfg, plan(len(cfg.Cluster) > 0), nil)
}

// describe defines the clauses as specs: one container, Ordered so that they run in the order
// given (ContinueOnFailure: a failed clause ends only itself), in it a container per contract
// labelled with the contract's id, and an It per clause whose verdict goes to done.
func describe(cfg *Config, clauses []planned, done func(verdict.Clause)) bool {
	return ginkgo.Describe("EchoMQ conformance", ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		for i := 0; i < len(clauses); {
			j := i + 1
			for j < len(clauses) && clauses[j].contract == clauses[i].contract {
				j++
			}
			c, run := clauses[i].contract, clauses[i:j]
			ginkgo.Describe(c.Title(), ginkgo.Label(c.ID), func() {
				for _, p := range run {
					ginkgo.It(p.id, func(ctx ginkgo.SpecContext) {
						cl := runClause(ctx, cfg, p)
						if done != nil {
							done(cl)
						}
						mirror(cl)
					})
				}
			})
			i = j
		}
	})
}

// mirror tells Ginkgo a clause's verdict: a failure fails the spec (its log gets the message),
// anything else that is not a pass skips it.
func mirror(cl verdict.Clause) {
	switch {
	case cl.Failed():
		ginkgo.Fail(cl.Message())
	case cl.Status != verdict.StatusPass:
		ginkgo.Skip(cl.Status.String() + ": " + cl.Reason)
	}
}

// inGinkgo runs the clauses in this process as Ginkgo specs, each verdict to done; failFast is
// Ginkgo's own (the specs after a failed one are skipped). Ginkgo allows one run per process.
func inGinkgo(cfg *Config, clauses []planned, failFast bool, done func(verdict.Clause)) {
	describe(cfg, clauses, done)
	sc, rc := ginkgo.GinkgoConfiguration()
	sc.RandomSeed = 1
	sc.FailFast = failFast
	sc.Timeout = 24 * time.Hour // runClause bounds each clause
	rc.NoColor = true
	rc.Succinct = true
	ginkgo.RunSpecs(&testingT{}, "EchoMQ conformance", sc, rc)
}

// testingT is the testing.T Ginkgo reports the suite's end to; the verdicts are the collector's.
type testingT struct{}

func (testingT) Fail() {}
