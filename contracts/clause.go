package contracts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
)

// The verdict travels typed from the clause to the report: the harness writes each clause's
// record (verdict.Record) as it runs — a failure with its rule, expected and got; a skip with its
// status and reason — and runClause settles it when the clause is done. Nothing is read back
// from message text; a clause the harness never decided is settled by how it ended (passed,
// timed out, panicked, interrupted).

// Bounds of a clause's life beyond Config.ClauseTimeout.
const (
	defaultClauseTimeout = 5 * time.Minute
	// A clause past its timeout has its context cancelled and this long to return; then it is
	// abandoned (a port call that ignores its context) and the clause is closed all the same.
	timeoutGrace = 30 * time.Second
	// closeTimeout bounds the closing of a clause's sessions and captures.
	closeTimeout = 30 * time.Second
)

// workLease is the lease of a claim whose expiry is not what the clause checks: an hour, which
// no clause outlives on any machine (a walk under the Node port took 30 s on a loaded one, and
// a 30 s lease that lapses turns the clause's own complete into a stale refusal).
const workLease int64 = 3_600_000

// stopClause is what a check that decided the verdict (a failure, a harness error, a skip)
// panics with to end the clause's body; runClause recovers it. The verdict is already in the
// record.
type stopClause struct{}

// runClause runs one clause on cfg — a fresh world, the body, the keyspace and wire-law checks,
// the close — and returns its verdict. It never panics and always returns: a check that fails
// ends the body, a body past cfg.ClauseTimeout is abandoned after timeoutGrace, and a panic is a
// harness error. Every engine (Ginkgo's specs, the lanes of a parallel run) runs clauses through
// it, so their verdicts are the same.
func runClause(parent context.Context, cfg *Config, p planned) verdict.Clause {
	timeout := cfg.ClauseTimeout
	if timeout <= 0 {
		timeout = defaultClauseTimeout
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	rec := verdict.NewRecord(p.id)
	t := &T{ctx: ctx, cfg: cfg, cid: p.contract.ID, covered: map[string]bool{}, rec: rec}
	// A subprocess port's exchange is kept for each failed clause (issue 11).
	exchange, _ := cfg.Factory.(drivers.Recorder)
	if exchange != nil {
		exchange.Mark()
	}
	start := time.Now()
	ended := make(chan any, 1)
	go func() {
		ended <- guard(func() {
			t.open(p.clause)
			p.body(t)
			t.keyspaceParses()
			t.checkWireLaw()
		})
	}()
	var e verdict.Ending
	select {
	case e.Panicked = <-ended:
	case <-ctx.Done():
		select {
		case e.Panicked = <-ended:
		case <-time.After(timeoutGrace):
		}
	}
	switch {
	case parent.Err() != nil:
		e.Interrupted = true
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.TimedOut = timeout
	}
	closing, done := context.WithTimeout(context.WithoutCancel(parent), closeTimeout)
	defer done()
	if v := guard(func() { t.close(closing, e.Failed() || rec.Failed()) }); e.Panicked == nil {
		e.Panicked = v
	}
	cl := rec.Settle(e)
	cl.Duration = time.Since(start)
	if exchange != nil && cl.Failed() {
		if ex := exchange.Exchange(); len(ex.Lines) > 0 || ex.Stderr != "" {
			cl.Exchange = &ex
		}
	}
	return cl
}

// guard runs f and returns what it panicked with, if anything but stopClause.
func guard(f func()) (panicked any) {
	defer func() {
		if v := recover(); v != nil {
			if _, stop := v.(stopClause); !stop {
				panicked = v
			}
		}
	}()
	f()
	return nil
}

// recoverPanic, deferred in a goroutine a clause starts, records a panic there as the clause's
// harness error rather than ending the run.
func (t *T) recoverPanic() {
	if v := recover(); v != nil {
		if _, stop := v.(stopClause); !stop {
			t.rec.Decide(verdict.StatusHarnessError, fmt.Sprintf("the harness panicked: %v", v), nil)
		}
	}
}
