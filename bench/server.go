package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// serverAcc sums Valkey's own account of the bus's scripts over the repeats of one scenario.
type serverAcc struct {
	calls, usec, jobs, wallUS int64
	err                       error
}

// isBus reports whether q is the plain bus, whose measurements Valkey's statistics bracket.
func (e *env) isBus(q queue.Queue) bool { return e.bus != nil && q.Info().Name == busq.Name }

// begin resets Valkey's statistics before a bus measurement; other systems pass.
func (e *env) begin(ctx context.Context, q queue.Queue) {
	if !e.isBus(q) {
		return
	}
	if err := e.bus.ResetStats(ctx); err != nil && e.server.err == nil {
		e.server.err = err
	}
}

// end reads them after it: jobs moved in wall time.
func (e *env) end(ctx context.Context, q queue.Queue, jobs int64, wall time.Duration) {
	if !e.isBus(q) {
		return
	}
	calls, usec, err := e.bus.EvalshaStats(ctx)
	if err != nil {
		if e.server.err == nil {
			e.server.err = err
		}
		return
	}
	e.server.calls += calls
	e.server.usec += usec
	e.server.jobs += jobs
	e.server.wallUS += wall.Microseconds()
}

// serverTime sets the bus's result's server time from the scenario's repeats and starts afresh.
func (e *env) serverTime(rs []*Result) {
	a := e.server
	e.server = serverAcc{}
	if a.err != nil {
		e.run.Gaps = append(e.run.Gaps, fmt.Sprintf("valkey commandstats: %v", a.err))
	}
	if a.calls == 0 || a.jobs == 0 || a.wallUS == 0 {
		return
	}
	st := &measure.ServerTime{Calls: a.calls, UsecPerCall: float64(a.usec) / float64(a.calls),
		UsecPerJob: float64(a.usec) / float64(a.jobs), ScriptShare: float64(a.usec) / float64(a.wallUS)}
	for _, r := range rs {
		if r.System == busq.Name && r.Err == "" {
			r.Server = st
		}
	}
}

// clockFor counts a driven system's client process on the client side.
func (e *env) clockFor(q queue.Queue) measure.Clock {
	if d, ok := q.(queue.Driven); ok {
		return e.clock.WithClient(d.PID())
	}
	return e.clock
}

// profileScripts times each drain script of the bus alone (Valkey's own statistics).
func (e *env) profileScripts(ctx context.Context) {
	if e.bus == nil {
		return
	}
	k := min(e.p.Backlog, 20000)
	sc, err := e.bus.ProfileScripts(ctx, k, e.p.Workers, e.p.Workers)
	if err != nil {
		e.run.Gaps = append(e.run.Gaps, fmt.Sprintf("bus script profile: %v", err))
		return
	}
	e.run.Scripts = sc
	for _, c := range sc {
		e.progress("valkey time of %s: %.2f µs per job (%d jobs, %d calls)", c.Script, c.UsecPerJob, c.Jobs, c.Calls)
	}
}
