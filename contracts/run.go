package contracts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// Statuses of a contract, and verdicts of a clause.
const (
	StatusPass         = "PASS"
	StatusFail         = "FAIL"
	StatusNotClaimed   = "NOT CLAIMED"
	StatusKnownFailing = "KNOWN FAILING"
	StatusHarnessError = "HARNESS ERROR"
	StatusNotRun       = "NOT RUN" // filtered out by -label / focus; never printed as a result
	// StatusNotOffered: the clause needs an optional test aid the port does not declare (e.g.
	// the clock op); printed with the reason, it neither passes nor fails its contract.
	StatusNotOffered = "NOT RUN (not offered)"
)

// Clause is one clause's outcome.
type Clause struct {
	ID       string        `json:"id"`
	Verdict  string        `json:"verdict"`
	Rule     string        `json:"rule,omitempty"`    // the rule a failure quotes (deterministic)
	Message  string        `json:"message,omitempty"` // the whole failure message
	Wire     string        `json:"wire,omitempty"`    // the port's wire trace of a failed clause
	Rules    []string      `json:"rules,omitempty"`   // the rules the clause evaluated (TRACEABILITY.md)
	Duration time.Duration `json:"duration_ns"`
	// Exchange is what a failed clause's sessions exchanged with a subprocess port: the JSON
	// lines both ways and the port's stderr tail.
	Exchange *drivers.Exchange `json:"exchange,omitempty"`
	// Queues (cluster runs) are the queues the port's calls touched and their primaries.
	Queues []QueueHome `json:"queues,omitempty"`
}

// ContractResult is one contract's outcome.
type ContractResult struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Rule    string   `json:"rule"`
	Status  string   `json:"status"`
	Note    string   `json:"note,omitempty"`
	Clauses []Clause `json:"clauses"`
	// ClausesRun of ClausesTotal clauses ran; the others were filtered out (-label, -focus) or
	// needed a server the run was not given. A partial contract is never counted as passed.
	ClausesRun   int `json:"clauses_run"`
	ClausesTotal int `json:"clauses_total"`
}

// Partial tells a contract some of whose clauses did not run.
func (c ContractResult) Partial() bool { return c.ClausesRun < c.ClausesTotal }

// Result is a whole run.
type Result struct {
	Contracts []ContractResult      `json:"contracts"`
	Hello     *protocol.HelloResult `json:"hello,omitempty"`
	Passed    int                   `json:"passed"`
	Total     int                   `json:"total"`
	Certified bool                  `json:"certified"`
	Filtered  bool                  `json:"filtered"`
	// Stale lists known-failing contracts that passed: the list must be updated.
	Stale    []string      `json:"stale_known_failing,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// ClausesRun of ClausesTotal clauses ran in the whole run.
	ClausesRun   int `json:"clauses_run"`
	ClausesTotal int `json:"clauses_total"`
	// Spread (cluster runs) is how the run's queues fell on the primaries; a cluster run whose
	// queues missed a primary certifies nothing.
	Spread *Spread `json:"spread,omitempty"`
}

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
	Register(cfg)
	var reports []types.SpecReport
	var current string
	// A subprocess port's exchange is kept for each failed clause (issue 11).
	rec, _ := cfg.Factory.(drivers.Recorder)
	exchanges := map[string]drivers.Exchange{}
	flush := func(next string) {
		if current != "" && current != next && opt.Progress != nil {
			r := summarize(reports, opt.KnownFailing, exchanges)
			for _, c := range r.Contracts {
				if c.ID == current && c.Status != StatusNotRun {
					opt.Progress(c)
				}
			}
		}
		current = next
	}
	ReportBeforeEach(func(sr SpecReport) {
		flush(contractOf(sr.LeafNodeText))
		if rec != nil {
			rec.Mark()
		}
	})
	ReportAfterEach(func(sr SpecReport) {
		if rec != nil && sr.Failed() {
			exchanges[sr.LeafNodeText] = rec.Exchange()
		}
		reports = append(reports, sr)
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
	flush("")
	r := summarize(reports, opt.KnownFailing, exchanges)
	r.Duration = time.Since(start)
	r.Filtered = len(opt.Labels) > 0 || len(opt.Focus) > 0
	return r, nil
}

// contractOf is "C09" for "C09/retry/…".
func contractOf(clauseID string) string {
	id, _, _ := strings.Cut(clauseID, "/")
	return id
}

// summarize turns spec reports into contract results.
func summarize(reports []types.SpecReport, known []string, exchanges map[string]drivers.Exchange) *Result {
	all := All()
	r := &Result{Total: len(all), Contracts: make([]ContractResult, len(all))}
	byID := map[string]*ContractResult{}
	var homes [][]QueueHome
	primaries := 0
	for i, c := range all {
		r.Contracts[i] = ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule, Status: StatusNotRun}
		byID[c.ID] = &r.Contracts[i]
	}
	for _, sr := range reports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		c := byID[contractOf(sr.LeafNodeText)]
		if c == nil {
			continue
		}
		cl := Clause{ID: sr.LeafNodeText, Duration: sr.RunTime}
		msg := sr.Failure.Message
		switch {
		case sr.State == types.SpecStatePassed:
			cl.Verdict = StatusPass
		case sr.State == types.SpecStateSkipped && strings.HasPrefix(msg, NotClaimedPrefix):
			cl.Verdict = StatusNotClaimed
		case sr.State == types.SpecStateSkipped && strings.HasPrefix(msg, NotOfferedPrefix):
			cl.Verdict, cl.Message = StatusNotOffered, strings.TrimPrefix(msg, NotOfferedPrefix)
		case sr.State == types.SpecStateSkipped && strings.HasPrefix(msg, NotRunPrefix):
			cl.Verdict, cl.Message = StatusNotRun, msg
		case sr.State == types.SpecStateSkipped || sr.State == types.SpecStatePending:
			cl.Verdict = StatusNotRun
		case strings.HasPrefix(msg, HarnessErrorPrefix):
			cl.Verdict, cl.Message = StatusHarnessError, msg
		default:
			cl.Verdict, cl.Message = StatusFail, msg
			if sr.State == types.SpecStateTimedout {
				cl.Message = "the clause timed out: " + msg
			}
			if sr.State == types.SpecStatePanicked {
				cl.Message = "the harness panicked: " + msg
				cl.Verdict = StatusHarnessError
			}
		}
		if cl.Verdict == StatusFail || cl.Verdict == StatusHarnessError {
			if ex, ok := exchanges[cl.ID]; ok && (len(ex.Lines) > 0 || ex.Stderr != "") {
				cl.Exchange = &ex
			}
			cl.Rule = ruleOf(cl.Message)
			for _, e := range sr.ReportEntries {
				if e.Name == ReportEntryWire {
					cl.Wire = e.StringRepresentation()
				}
			}
		}
		for _, e := range sr.ReportEntries {
			switch e.Name {
			case ReportEntryRules:
				cl.Rules = strings.Fields(e.StringRepresentation())
			case ReportEntryQueues:
				cl.Queues = parseQueueHomes(e.StringRepresentation())
				homes = append(homes, cl.Queues)
			case ReportEntryPrimaries:
				if n, err := strconv.Atoi(e.StringRepresentation()); err == nil {
					primaries = max(primaries, n)
				}
			}
		}
		if r.Hello == nil {
			for _, e := range sr.ReportEntries {
				if e.Name == ReportEntryHello {
					var h protocol.HelloResult
					if json.Unmarshal([]byte(e.StringRepresentation()), &h) == nil {
						r.Hello = &h
					}
				}
			}
		}
		c.Clauses = append(c.Clauses, cl)
	}
	for i := range r.Contracts {
		c := &r.Contracts[i]
		c.Status = contractStatus(c.Clauses)
		c.ClausesTotal = len(c.Clauses)
		for _, cl := range c.Clauses {
			if cl.Verdict != StatusNotRun {
				c.ClausesRun++
			}
		}
		r.ClausesRun += c.ClausesRun
		r.ClausesTotal += c.ClausesTotal
		listed := slices.Contains(known, c.ID)
		switch {
		case listed && c.Status == StatusFail:
			c.Status = StatusKnownFailing
		case listed && c.Status == StatusPass:
			c.Note = "listed as known failing but passed: remove it from the list"
			r.Stale = append(r.Stale, c.ID)
		}
		if c.Status == StatusPass && !c.Partial() {
			r.Passed++
		}
	}
	r.Spread = spreadOf(homes, primaries)
	r.Certified = r.Passed == r.Total && len(r.Stale) == 0 && (r.Spread == nil || r.Spread.Covered())
	return r
}

// contractStatus folds clause verdicts: a harness error wins (nothing can be said), then a
// failure, then not claimed; a contract passes when at least one clause ran and none failed.
func contractStatus(cls []Clause) string {
	has := map[string]bool{}
	for _, c := range cls {
		has[c.Verdict] = true
	}
	switch {
	case has[StatusHarnessError]:
		return StatusHarnessError
	case has[StatusFail]:
		return StatusFail
	case has[StatusNotClaimed]:
		return StatusNotClaimed
	case has[StatusPass]:
		return StatusPass
	}
	return StatusNotRun
}

// ruleOf picks the RULE line of a failure message.
func ruleOf(msg string) string {
	for _, l := range strings.Split(msg, "\n") {
		if r, ok := strings.CutPrefix(l, "RULE:"); ok {
			return strings.TrimSpace(r)
		}
	}
	if strings.HasPrefix(msg, HarnessErrorPrefix) {
		return "the harness could not run this clause"
	}
	return "the clause failed"
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
