package contracts

import (
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/drivers"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// RunOptions select what runs and how it is judged.
type RunOptions struct {
	// Labels restricts the run to these contracts (e.g. {"C09"}); empty: all fourteen.
	Labels []string
	// Focus restricts the run to clauses whose text matches one of these regular expressions
	// (Select).
	Focus []string
	// Known names the clauses that may fail (known failing, known flaky); a known-failing one
	// that passes fails the run. Nil: none.
	Known Known
	// Progress, if set, receives each contract's result as soon as its last clause ran.
	Progress func(ContractResult)
	// Claim, if set, makes this process one worker of a run shared by several (emq-conform
	// -parallel): a selected clause runs here only if Claim says this worker takes it, and the
	// result holds only the clauses run here. Each receives its verdict in OnClause.
	Claim    func(id string) bool
	OnClause func(Clause)
	// FailFast stops the run at its first failing clause: the clauses after it are NOT RUN and
	// the run is never a certification (a mutation test needs one failure to kill).
	FailFast bool
	// First, if set, picks the clauses that run before the others (a mutation test runs the
	// clauses that execute the mutated code first).
	First func(id string) bool
}

// longClause picks the clauses that take longest (the model-checked walks, the minter lease's
// waits on the server's clock, the fields and the limits at their maximum, park's timing): a
// parallel run deals them out first, so that none is left running alone at the end.
var longClause = regexp.MustCompile(`/walk-|/lease-|/fields$|-fields$|at-its-maximum|/idle-|clock-back|sequence-overflow`)

type testingT struct{ failed bool }

func (t *testingT) Fail() { t.failed = true }

// Run registers the specs for cfg and runs them once (Ginkgo allows one run per process). A
// selection that picks no clause is ErrNoClause, before anything runs.
func Run(cfg *Config, opt RunOptions) (*Result, error) {
	selected, err := Select(len(cfg.Cluster) > 0, opt.Labels, opt.Focus)
	if err != nil {
		return nil, err
	}
	picked := map[string]bool{}
	for _, id := range selected {
		picked[id] = true
	}
	first := opt.First
	if first == nil && opt.Claim != nil { // a parallel worker: the longest clauses first
		first = longClause.MatchString
	}
	led, _ := register(cfg, first)
	here := map[string]bool{} // the selected clauses this process runs
	var stopped atomic.Bool   // FailFast: a clause failed
	led.gate = func(id string) bool {
		if !picked[id] || stopped.Load() || (opt.Claim != nil && !opt.Claim(id)) {
			return false
		}
		here[id] = true
		return true
	}
	var clauses []Clause
	done := map[string][]Clause{} // by contract, for the progress line
	// A subprocess port's exchange is kept for each failed clause (issue 11).
	rec, _ := cfg.Factory.(drivers.Recorder)
	ReportBeforeEach(func(sr SpecReport) {
		if rec != nil && sr.LeafNodeType == types.NodeTypeIt {
			rec.Mark()
		}
	})
	ReportAfterEach(func(sr SpecReport) {
		if sr.LeafNodeType != types.NodeTypeIt {
			return
		}
		cl := led.finish(sr)
		if opt.Claim != nil && !here[cl.ID] {
			return // another worker's, or not selected: the run that merges says
		}
		if opt.FailFast && cl.Failed() {
			stopped.Store(true)
		}
		if rec != nil && cl.Failed() {
			if ex := rec.Exchange(); len(ex.Lines) > 0 || ex.Stderr != "" {
				cl.Exchange = &ex
			}
		}
		if opt.OnClause != nil {
			opt.OnClause(cl)
		}
		clauses = append(clauses, cl)
		id := contractOf(cl.ID)
		done[id] = append(done[id], cl)
		if len(done[id]) == led.clauses(id) && opt.Progress != nil {
			if cr := ContractOf(id, done[id], opt.Known); cr.Status != StatusNotRun {
				opt.Progress(cr)
			}
		}
	})

	sc, rc := GinkgoConfiguration()
	sc.RandomSeed = 1
	sc.RandomizeAllSpecs = false
	sc.Timeout = 24 * time.Hour
	rc.NoColor = true
	rc.Succinct = true
	start := time.Now()
	RunSpecs(&testingT{}, "EchoMQ conformance", sc, rc)
	r := Summarize(clauses, opt.Known)
	r.Duration = time.Since(start)
	r.Filtered = len(selected) < len(Clauses(len(cfg.Cluster) > 0)) || opt.FailFast
	r.FailFast = opt.FailFast
	return r, nil
}

// ContractOf folds one contract's clause verdicts (all of them done) into its result, for a
// progress line.
func ContractOf(id string, clauses []Clause, known Known) ContractResult {
	c, _ := Lookup(id)
	cr := ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule}
	cr.Clauses, _ = expect(clauses, known)
	fold(&cr)
	return cr
}

// contractOf is "C09" for "C09/retry/…".
func contractOf(clauseID string) string {
	id, _, _ := strings.Cut(clauseID, "/")
	return id
}

// ClauseList is a contract and its clause ids, for -list.
type ClauseList struct {
	Contract Contract
	Clauses  []string
}

// List returns the contracts and the clauses of a standalone run, in declaration order, without
// running or registering anything.
func List() []ClauseList {
	var out []ClauseList
	ids := Clauses(false)
	for _, c := range All() {
		cl := ClauseList{Contract: c}
		for _, id := range ids {
			if contractOf(id) == c.ID {
				cl.Clauses = append(cl.Clauses, id)
			}
		}
		out = append(out, cl)
	}
	return out
}
