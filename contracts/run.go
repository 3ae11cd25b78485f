package contracts

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/echomq/kit/contracts/verdict"
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
	Known verdict.Known
	// Progress, if set, receives each contract's result as soon as its last selected clause ran.
	Progress func(verdict.ContractResult)
	// FailFast stops the run at its first failing clause: the clauses after it are NOT RUN and
	// the run is never a certification (a mutation test needs one failure to kill).
	FailFast bool
	// First, if set, picks the clauses that run before the others (a mutation test runs the
	// clauses that execute the mutated code first), the short before the long (longClauses);
	// nil on several lanes: the longest first.
	First func(id string) bool
}

// longClauses pick, longest first, the clauses that take longest, so that a run on several
// lanes deals them out first and none is left running alone at the end: the 32 s outage, then
// the others, which wait
// on the port's own timers (a silent line found lost, redials paced through a refusal, a park
// answering a loss, a connect nobody answers given up, a lease lost on the minter's own timers),
// a healthy session or a long pop held for seconds; each holds a lane while it uses little of a
// core. Then the model-checked walks, the minter lease's waits on the server's clock, the
// fields, the limits and the payload at their maximum, the server versions, park's timing.
var longClauses = []*regexp.Regexp{
	regexp.MustCompile(`/redials-paced-while-refused$`), // its outage alone outlasts B-282's 30 s
	regexp.MustCompile(`/park-line-quiet-|/woken-while-|falls?-silent|slow-then-silent|redials-|/dropped-|/park-answers-|/park-lines-|-kept$|/long-pop-|/unanswered-|/lease-lost-|/reconnect-after-lost-lease`),
	regexp.MustCompile(`/walk-|/lease-|/fields$|-fields$|at-its-maximum|/largest-|/idle-|clock-back|sequence-overflow|cut-at-every-byte|versions-compared|/mint-bound-`),
}

// longFirst ranks a clause by the first of longClauses that picks it (the others after them).
func longFirst(id string) int {
	for i, re := range longClauses {
		if re.MatchString(id) {
			return i
		}
	}
	return len(longClauses)
}

// Run runs the clauses opt selects on lanes, each a Config of its own (its own Valkey, its own
// port factory), and folds their verdicts. On one lane the clauses run in this process as Ginkgo
// specs, in declaration order (Ginkgo allows one run per process; FailFast is Ginkgo's own); on
// more, all lanes run at once, each clause on the first lane free, and a failure under FailFast
// deals no more. opt.First's clauses go first either way. Every clause runs through runClause,
// so the verdicts, and the reports made of them, are those of a run on one lane. A selection that
// picks no clause is ErrNoClause, before anything runs.
func Run(ctx context.Context, lanes []*Config, opt RunOptions) (*verdict.Result, error) {
	cluster := len(lanes[0].Cluster) > 0
	todo, err := selected(cluster, opt.Labels, opt.Focus)
	if err != nil {
		return nil, err
	}
	rank := func(planned) int { return 0 }
	switch {
	case opt.First != nil:
		// The picked clauses shortest first: a kill needs one failure, and the short clauses
		// that evaluate the same rule reach it before a long one holds the run for its length.
		l := len(longClauses)
		rank = func(p planned) int { return boolRank(opt.First(p.id))*(l+1) + l - longFirst(p.id) }
	case len(lanes) > 1:
		rank = func(p planned) int { return longFirst(p.id) }
	}
	slices.SortStableFunc(todo, func(a, b planned) int { return cmp.Compare(rank(a), rank(b)) })
	if opt.FailFast {
		lanes = lastFailures(lanes)
	}
	tally := verdict.NewTally(Headings(), idsOf(todo), opt.Known, opt.Progress)
	start := time.Now()
	if len(lanes) == 1 {
		inGinkgo(lanes[0], todo, opt.FailFast, tally.Add)
	} else {
		stop := func() bool { return opt.FailFast && tally.Failed() }
		onLanes(ctx, lanes, todo, stop, tally.Add)
	}
	all := Clauses(cluster)
	r := verdict.Summarize(Headings(), tally.Clauses(all, opt.FailFast), opt.Known)
	r.Duration = time.Since(start)
	r.Filtered = len(todo) < len(all) || opt.FailFast
	r.FailFast = opt.FailFast
	return r, nil
}

// lastFailures copies the lanes' configs, marked so that a failing clause, the run's last under
// FailFast, closes without waiting for a park it left running.
func lastFailures(lanes []*Config) []*Config {
	out := make([]*Config, len(lanes))
	for i, c := range lanes {
		cp := *c
		cp.lastFailure = true
		out[i] = &cp
	}
	return out
}

// boolRank puts the clauses opt.First picks before the others.
func boolRank(first bool) int {
	if first {
		return 0
	}
	return 1
}

// onLanes runs the clauses on every lane at once: each lane takes the next clause as it comes
// free. Once stop says so (a failure under FailFast), or ctx is cancelled, it deals no more; a
// stop also cuts short the clauses still running (a kill needs one failure, and a long clause
// on another lane would hold the run for its whole length), and their verdicts are dropped:
// they are NOT RUN, never a failure the stop caused.
func onLanes(ctx context.Context, lanes []*Config, todo []planned, stop func() bool, done func(verdict.Clause)) {
	stopped, halt := context.WithCancel(ctx)
	defer halt()
	next := make(chan planned)
	go func() {
		defer close(next)
		for _, p := range todo {
			if stop() {
				return
			}
			select {
			case next <- p:
			case <-stopped.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for _, cfg := range lanes {
		wg.Go(func() {
			for p := range next {
				if stop() { // a clause dealt before another lane's failure stays unrun
					continue
				}
				cl := runClause(stopped, cfg, p)
				if stopped.Err() != nil && ctx.Err() == nil {
					continue // ended after the stop: cut short by it
				}
				done(cl)
				if stop() {
					halt()
				}
			}
		})
	}
	wg.Wait()
}
