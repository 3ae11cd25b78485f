package contracts

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// RunOptions select what runs and how it is judged.
type RunOptions struct {
	// Labels restricts the run to these contracts (e.g. {"C09"}); empty: all fourteen.
	Labels []string
	// Focus restricts the run to clauses whose id matches one of these regular expressions.
	Focus []string
	// KnownFailing lists contracts that may fail; one of them that passes fails the run.
	KnownFailing []string
	// Progress, if set, receives each contract's result as soon as its last clause ran.
	Progress func(ContractResult)
}

type testingT struct{ failed bool }

func (t *testingT) Fail() { t.failed = true }

// Run registers the specs for cfg and runs them once. Ginkgo allows one run per process.
func Run(cfg *Config, opt RunOptions) (*Result, error) {
	for _, l := range append(append([]string(nil), opt.Labels...), opt.KnownFailing...) {
		if _, err := ParseID(l); err != nil {
			return nil, err
		}
	}
	for _, f := range opt.Focus {
		if _, err := regexp.Compile(f); err != nil {
			return nil, fmt.Errorf("suite: focus %q: %w", f, err)
		}
	}
	led, _ := register(cfg)
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
		if rec != nil && cl.Failed() {
			if ex := rec.Exchange(); len(ex.Lines) > 0 || ex.Stderr != "" {
				cl.Exchange = &ex
			}
		}
		clauses = append(clauses, cl)
		id := contractOf(cl.ID)
		done[id] = append(done[id], cl)
		if len(done[id]) == led.clauses(id) && opt.Progress != nil {
			c, _ := Lookup(id)
			cr := ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule, Clauses: done[id]}
			fold(&cr, opt.KnownFailing)
			if cr.Status != StatusNotRun {
				opt.Progress(cr)
			}
		}
	})

	sc, rc := GinkgoConfiguration()
	sc.LabelFilter = strings.Join(opt.Labels, " || ")
	sc.FocusStrings = opt.Focus
	sc.RandomSeed = 1
	sc.RandomizeAllSpecs = false
	sc.Timeout = time.Hour
	rc.NoColor = true
	rc.Succinct = true
	start := time.Now()
	RunSpecs(&testingT{}, "EchoMQ conformance", sc, rc)
	r := Summarize(clauses, opt.KnownFailing)
	r.Duration = time.Since(start)
	r.Filtered = len(opt.Labels) > 0 || len(opt.Focus) > 0
	return r, nil
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

// List registers the specs and returns the contracts and clauses without running anything.
func List() []ClauseList {
	Register(&Config{})
	rep := PreviewSpecs("EchoMQ conformance")
	var out []ClauseList
	for _, c := range All() {
		cl := ClauseList{Contract: c}
		for _, sr := range rep.SpecReports {
			if sr.LeafNodeType == types.NodeTypeIt && contractOf(sr.LeafNodeText) == c.ID {
				cl.Clauses = append(cl.Clauses, sr.LeafNodeText)
			}
		}
		out = append(out, cl)
	}
	return out
}
