package contracts

import (
	"sync"

	"github.com/onsi/ginkgo/v2/types"
)

// The verdict travels typed from the clause to the report: the harness writes each clause's
// record as it runs (a failure with its rule, expected and got; a skip with its status and
// reason), and the runner takes the record when Ginkgo reports the clause done. Ginkgo's own
// messages only go to its log; nothing is read back from them but the state of a clause the
// harness never decided (a timeout, a panic).

// record is one running clause's verdict, written by its harness (possibly from a goroutine the
// clause started).
type record struct {
	mu      sync.Mutex
	decided bool
	c       Clause
}

// decide sets the clause's status unless a graver one is already set; f, if any, is appended.
func (r *record) decide(st Status, reason string, f *Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.decided || st > r.c.Status {
		r.c.Status, r.decided = st, true
		if reason != "" {
			r.c.Reason = reason
		}
	}
	if f != nil {
		r.c.Failures = append(r.c.Failures, *f)
	}
}

// update edits the record's facts (rules, wire, hello, queues) under its lock.
func (r *record) update(f func(c *Clause)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.c)
}

// ledger holds the records of one registration: the clauses each contract declares, and the
// records of the clauses running or done but not yet taken by the runner.
type ledger struct {
	mu       sync.Mutex
	declared map[string]int // contract id → its clauses
	running  map[string]*record
}

func newLedger() *ledger {
	return &ledger{declared: map[string]int{}, running: map[string]*record{}}
}

func (l *ledger) declare(contract string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.declared[contract]++
}

// clauses is how many clauses a contract declared.
func (l *ledger) clauses(contract string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.declared[contract]
}

// start opens the record of a clause that begins to run.
func (l *ledger) start(id string) *record {
	r := &record{c: Clause{ID: id}}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[id] = r
	return r
}

// finish takes the record of a clause Ginkgo reports done and settles its verdict: what the
// harness decided, or, when it decided nothing, what Ginkgo's state of the clause says.
func (l *ledger) finish(sr types.SpecReport) Clause {
	l.mu.Lock()
	r := l.running[sr.LeafNodeText]
	delete(l.running, sr.LeafNodeText)
	l.mu.Unlock()
	cl, decided := Clause{ID: sr.LeafNodeText}, false
	if r != nil {
		r.mu.Lock()
		cl, decided = r.c, r.decided
		r.mu.Unlock()
	}
	cl.Duration = sr.RunTime
	msg := sr.Failure.Message
	switch sr.State {
	case types.SpecStatePassed:
		if !decided {
			cl.Status = StatusPass
		}
	case types.SpecStateSkipped, types.SpecStatePending:
		if !decided { // filtered out, or skipped by code outside the harness
			cl.Status, cl.Reason = StatusNotRun, msg
		}
	case types.SpecStateTimedout:
		cl.Status, cl.Reason = StatusFail, ""
		cl.Failures = append([]Failure{{Got: "the clause timed out: " + msg}}, cl.Failures...)
	case types.SpecStatePanicked:
		cl.Status, cl.Reason = StatusHarnessError, "the harness panicked: "+msg
	default: // failed, aborted, interrupted
		if !decided || cl.Status < StatusFail {
			cl.Status = StatusFail
			cl.Failures = append(cl.Failures, Failure{Got: msg})
		}
	}
	return cl
}
