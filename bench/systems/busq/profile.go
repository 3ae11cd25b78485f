package busq

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/reference/bus"
)

// ProfileScripts measures the drain's scripts alone, on k jobs per step, resetting the
// server's statistics between steps: the batch scripts the consumer's batchers use
// (enqueue_batch by EnqueueBatch, claim_batch and complete_batch in groups of up to group), then
// the single-job claim and complete (conc callers on the shared connection).
func (q *Bus) ProfileScripts(ctx context.Context, k, group, conc int) ([]measure.ScriptCost, error) {
	if err := q.Reset(ctx); err != nil {
		return nil, err
	}
	defer q.Reset(context.WithoutCancel(ctx))
	group = max(1, min(group, bus.MaxBatch))
	p := &profiler{q: q, k: k}
	name := q.name()
	if err := p.step(ctx, "enqueue_batch", func() error { return q.Fill(ctx, k) }); err != nil {
		return nil, err
	}
	var jobs []*bus.Job
	if err := p.step(ctx, "claim_batch", func() (err error) {
		jobs, err = q.claimBatches(ctx, name, k, group)
		return err
	}); err != nil {
		return nil, err
	}
	if err := p.step(ctx, "complete_batch", func() error { return q.completeBatches(ctx, name, jobs, group) }); err != nil {
		return nil, err
	}
	if err := q.Fill(ctx, k); err != nil {
		return nil, err
	}
	singles := make([]*bus.Job, k)
	if err := p.step(ctx, "claim", func() error {
		return queue.Parallel(k, conc, func(i int) error {
			j, err := q.b.Claim(ctx, name, bus.Ms(Lease))
			if err == nil && j == nil {
				err = fmt.Errorf("%w: claim %d found the queue empty", queue.ErrIncomplete, i)
			}
			singles[i] = j
			return err
		})
	}); err != nil {
		return nil, err
	}
	if err := p.step(ctx, "complete", func() error {
		return queue.Parallel(k, conc, func(i int) error { return singles[i].Complete(ctx) })
	}); err != nil {
		return nil, err
	}
	return p.out, nil
}

type profiler struct {
	q   *Bus
	k   int
	out []measure.ScriptCost
}

// step runs one step between a reset and a read of the server's statistics.
func (p *profiler) step(ctx context.Context, name string, run func() error) error {
	if err := measure.ResetStats(ctx, p.q.admin); err != nil {
		return err
	}
	if err := run(); err != nil {
		return fmt.Errorf("bench: profile %s: %w", name, err)
	}
	calls, usec, err := measure.EvalshaStats(ctx, p.q.admin)
	if err != nil {
		return err
	}
	if calls == 0 {
		return fmt.Errorf("bench: profile %s: no EVALSHA reached the server", name)
	}
	p.out = append(p.out, measure.ScriptCost{Script: name, Jobs: p.k, Calls: calls,
		UsecPerCall: float64(usec) / float64(calls), UsecPerJob: float64(usec) / float64(p.k)})
	return nil
}

func (q *Bus) claimBatches(ctx context.Context, name string, k, group int) ([]*bus.Job, error) {
	var jobs []*bus.Job
	for len(jobs) < k {
		js, err := q.b.ClaimBatch(ctx, name, bus.Ms(Lease), min(group, k-len(jobs)))
		if err != nil {
			return nil, err
		}
		if len(js) == 0 {
			return nil, fmt.Errorf("%w: the queue ran dry after %d claims", queue.ErrIncomplete, len(jobs))
		}
		jobs = append(jobs, js...)
	}
	return jobs, nil
}

func (q *Bus) completeBatches(ctx context.Context, name string, jobs []*bus.Job, group int) error {
	for lo := 0; lo < len(jobs); lo += group {
		part := jobs[lo:min(lo+group, len(jobs))]
		acks := make([]bus.Ack, len(part))
		for i, j := range part {
			acks[i] = bus.Ack{ID: j.ID, Token: j.Token}
		}
		status, err := q.b.CompleteBatch(ctx, name, acks)
		if err != nil {
			return err
		}
		if err := errors.Join(status...); err != nil {
			return err
		}
	}
	return nil
}

// ResetStats zeroes Valkey's statistics on the bus's server: the bench brackets each bus
// measurement with ResetStats and EvalshaStats.
func (q *Bus) ResetStats(ctx context.Context) error { return measure.ResetStats(ctx, q.admin) }

// EvalshaStats is the EVALSHA calls and µs since the last ResetStats.
func (q *Bus) EvalshaStats(ctx context.Context) (calls, usec int64, err error) {
	return measure.EvalshaStats(ctx, q.admin)
}

// WatchStalls arms Valkey's latency monitor at 1 ms and clears what it saw: the events it then
// records (LATENCY LATEST) are the server's own stalls, each an event that took a millisecond or
// more of wall time.
func (q *Bus) WatchStalls(ctx context.Context) error {
	if _, err := q.admin.Do(ctx, "CONFIG", "SET", "latency-monitor-threshold", "1"); err != nil {
		return fmt.Errorf("bench: latency monitor: %w", err)
	}
	if _, err := q.admin.Do(ctx, "LATENCY", "RESET"); err != nil {
		return fmt.Errorf("bench: LATENCY RESET: %w", err)
	}
	return nil
}

// Stalls reads the latency monitor since WatchStalls: each event's name with its worst and its
// latest duration in ms ("fast-command": a constant-time command that took a millisecond or more
// of wall time, which only a server thread kept off its CPU does).
func (q *Bus) Stalls(ctx context.Context) ([][2]string, error) {
	v, err := q.admin.Do(ctx, "LATENCY", "LATEST")
	if err != nil {
		return nil, fmt.Errorf("bench: LATENCY LATEST: %w", err)
	}
	var out [][2]string
	for _, e := range v.Elems {
		if len(e.Elems) < 4 {
			continue
		}
		out = append(out, [2]string{e.Elems[0].Text(), fmt.Sprintf("max %d ms (latest %d ms)", e.Elems[3].Int, e.Elems[2].Int)})
	}
	return out, nil
}

// LatencyStats reads Valkey's own per-command latency percentiles (INFO latencystats, µs since
// the last ResetStats) for the commands the bus's latency path uses.
func (q *Bus) LatencyStats(ctx context.Context) ([][2]string, error) {
	v, err := q.admin.Do(ctx, "INFO", "latencystats")
	if err != nil {
		return nil, fmt.Errorf("bench: INFO latencystats: %w", err)
	}
	var out [][2]string
	for _, line := range strings.Split(string(v.Str), "\n") {
		k, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if cmd, found := strings.CutPrefix(k, "latency_percentiles_usec_"); ok && found && (cmd == "evalsha" || cmd == "blpop" || cmd == "lpush") {
			out = append(out, [2]string{cmd, rest})
		}
	}
	return out, nil
}
