package verdict

import (
	"fmt"
	"sync"
	"time"
)

// Record is a running clause's verdict as its harness writes it, from the clause's goroutine or
// from one it started: Decide sets the status, Update the facts, and Settle gives the verdict
// once the clause has ended — what the harness decided or, when it decided nothing, how the
// clause ended.
type Record struct {
	mu      sync.Mutex
	decided bool
	c       Clause
}

// NewRecord opens the record of clause id.
func NewRecord(id string) *Record { return &Record{c: Clause{ID: id}} }

// Decide sets the clause's status unless a graver one is already set; f, if any, is appended.
func (r *Record) Decide(st Status, reason string, f *Failure) {
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

// Update edits the record's facts (rules, wire, hello, queues) under its lock.
func (r *Record) Update(f func(c *Clause)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.c)
}

// Failed tells a record that holds a failure or a harness error.
func (r *Record) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.Failed()
}

// Ending is how a clause's body ended, beyond what its harness recorded.
type Ending struct {
	TimedOut    time.Duration // past its timeout (this long)
	Interrupted bool          // the run was cancelled under it
	Panicked    any           // a panic the harness did not raise
}

// Failed tells an ending that fails the clause whatever the harness recorded.
func (e Ending) Failed() bool { return e.TimedOut > 0 || e.Interrupted || e.Panicked != nil }

// Settle is the clause's verdict: what the harness decided, or, when it decided nothing, how
// the clause ended (a pass when it simply returned).
func (r *Record) Settle(e Ending) Clause {
	r.mu.Lock()
	cl, decided := r.c, r.decided
	r.mu.Unlock()
	switch {
	case e.Panicked != nil:
		cl.Status, cl.Reason = StatusHarnessError, fmt.Sprintf("the harness panicked: %v", e.Panicked)
	case e.TimedOut > 0:
		cl.Status, cl.Reason = StatusFail, ""
		cl.Failures = append([]Failure{{Got: fmt.Sprintf("the clause timed out after %s", e.TimedOut)}}, cl.Failures...)
	case e.Interrupted && (!decided || cl.Status < StatusFail):
		cl.Status = StatusFail
		cl.Failures = append(cl.Failures, Failure{Got: "the run was interrupted under the clause"})
	case !decided:
		cl.Status = StatusPass
	}
	return cl
}
