package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// runDrain is the drain family: a backlog of n worked off by W workers with an empty handler,
// repeats interleaved across the systems offering name (drain, the backlog axis's drain-backlog,
// drain-exactly-once).
func (e *env) runDrain(ctx context.Context, name string, n, repeats int) *Scenario {
	qs := e.systemsFor(name)
	ts := tallies{}
	for rep := range repeats {
		for _, q := range qs {
			t := ts.of(q.Info().Name)
			if t.err != nil {
				continue
			}
			rate, startup, err := e.drainOnce(ctx, q, n, t)
			if err != nil {
				t.err = err
				e.progress("%s %s (%d jobs): error: %v", name, q.Info().Name, n, err)
				continue
			}
			t.rates = append(t.rates, rate)
			t.startups = append(t.startups, float64(startup.Microseconds())/1000)
			e.progress("%s %s (%d jobs) repeat %d/%d: %.0f jobs/s (start-up %v, outside the window)", name, q.Info().Name, n, rep+1, repeats, rate, startup.Round(time.Millisecond))
		}
	}
	s := &Scenario{Name: name, Title: e.drainTitle(name, n), Concurrency: e.p.Workers, Backlog: n}
	s.Results = e.results(qs, ts, func(i queue.Info) string {
		if i.Engine == queue.Valkey {
			return "valkey-evalsha"
		}
		return "pg-commit-n"
	})
	e.serverTime(s.Results)
	s.Ratios = ratios(s.Results, e.models())
	e.run.Scenarios = append(e.run.Scenarios, s)
	return s
}

func (e *env) drainTitle(name string, n int) string {
	switch name {
	case queue.DrainOnce:
		return fmt.Sprintf("drain a backlog of %d with %d workers, each handler an exactly-once effect: one PostgreSQL transaction records the job id and writes the effect row (reference/absorb); compare with drain", n, e.p.Workers)
	case queue.DrainBacklog:
		return fmt.Sprintf("the backlog axis: drain a backlog of %d with %d workers each (one round), empty handler; timed from the first handler start to the last recorded ack", n, e.p.Workers)
	}
	return fmt.Sprintf("drain a backlog of %d with %d workers each, empty handler; timed from the first handler start to the last recorded ack", n, e.p.Workers)
}

// drainOnce pre-fills n jobs (outside the window) and times their burn-down by W workers. CPU
// runs from just before the drain's start-up to its last ack; Valkey's script time (the bus)
// is read against the timed window.
func (e *env) drainOnce(ctx context.Context, q queue.Queue, n int, t *tally) (float64, time.Duration, error) {
	if err := q.Reset(ctx); err != nil {
		return 0, 0, err
	}
	if err := q.Fill(ctx, n); err != nil {
		return 0, 0, err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(n/1000)*time.Second)
	defer cancel()
	e.begin(ctx, q)
	clk := e.clockFor(q)
	c0 := clk.Read()
	c1 := c0
	m := queue.NewDrainMarks(n, func() { c1 = clk.Read() })
	if err := q.Drain(dctx, e.p.Workers, m); err != nil {
		return 0, 0, err
	}
	rate, startup, err := m.Window()
	if err != nil {
		return 0, 0, err
	}
	e.end(ctx, q, int64(n), time.Duration(float64(n)/rate*float64(time.Second)))
	t.cpu.Add(c0, c1)
	return rate, startup, nil
}

// runDrainOnce is the bus with an absorbing handler, compared with every system's plain drain.
func (e *env) runDrainOnce(ctx context.Context) {
	once := e.runDrain(ctx, queue.DrainOnce, e.p.Backlog, e.p.Repeats)
	r := once.Result(busq.AbsorbName)
	plain := e.run.scenario(queue.Drain)
	if r == nil || plain == nil {
		return
	}
	once.Ratios = nil
	for _, o := range plain.Results {
		if o.Err == "" && o.JobsPerS.Median > 0 {
			once.Ratios = append(once.Ratios, Ratio{Name: busq.AbsorbName + "/" + o.System + " (plain drain)", Value: r.JobsPerS.Median / o.JobsPerS.Median})
		}
	}
}
