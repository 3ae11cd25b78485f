package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/bench/queue"
)

// enqueueShape is what one enqueue scenario asks of a system: producers, batch size, title and
// the PostgreSQL ceiling it is read against.
type enqueueShape struct {
	conc, batch int
	title, pg   string
}

func (e *env) enqueueShape(name string) enqueueShape {
	p := e.p
	switch name {
	case queue.EnqueueSingle:
		return enqueueShape{1, 0, "enqueue, one producer, one job per commit", "pg-commit-1"}
	case queue.EnqueueConc:
		return enqueueShape{p.Producers, 0, fmt.Sprintf("enqueue, %d concurrent producers, one job per commit", p.Producers), "pg-commit-n"}
	case queue.EnqueueBatch:
		return enqueueShape{1, p.Batch, fmt.Sprintf("enqueue, one producer, batches of %d (each system's batch insert: one multi-row INSERT, one enqueue_batch, addBulk …)", p.Batch), "pg-commit-1"}
	}
	return enqueueShape{p.Producers, 0, fmt.Sprintf("business row + its job in one PostgreSQL transaction, %d producers (Postgres queues: the job row; bus: an outbox row, relayed to the bus — timed until the last job is on the bus)", p.Producers), "pg-commit-n"}
}

// runEnqueue is the enqueue family: one scenario, repeats interleaved across the systems that
// offer it.
func (e *env) runEnqueue(ctx context.Context, name string) {
	sh := e.enqueueShape(name)
	qs := e.systemsFor(name)
	ts := tallies{}
	for rep := range e.p.Repeats {
		for _, q := range qs {
			t := ts.of(q.Info().Name)
			if t.err != nil {
				continue
			}
			r, err := e.enqueueOnce(ctx, q, name, sh, t)
			if err != nil {
				t.err = err
				e.progress("%s %s: error: %v", name, q.Info().Name, err)
				continue
			}
			t.rates = append(t.rates, r)
			e.progress("%s %s repeat %d/%d: %.0f jobs/s", name, q.Info().Name, rep+1, e.p.Repeats, r)
		}
	}
	s := &Scenario{Name: name, Title: sh.title, Concurrency: sh.conc, Batch: sh.batch}
	s.Results = e.results(qs, ts, func(i queue.Info) string {
		if i.Engine == queue.Valkey && name != queue.EnqueueTx {
			return "valkey-evalsha"
		}
		return sh.pg
	})
	if name == queue.EnqueueTx {
		for _, r := range s.Results {
			if r.Engine == queue.Valkey {
				r.Engine = queue.PostgresValkey // the bus pair writes to both; PG's commit bounds it
			}
		}
	}
	e.serverTime(s.Results)
	s.Ratios = ratios(s.Results, e.models())
	e.run.Scenarios = append(e.run.Scenarios, s)
}

// enqueueOnce is one timed repeat of one system, its CPU and (for the bus) Valkey's time
// accounted into t.
func (e *env) enqueueOnce(ctx context.Context, q queue.Queue, name string, sh enqueueShape, t *tally) (float64, error) {
	if err := q.Reset(ctx); err != nil {
		return 0, err
	}
	if name == queue.EnqueueTx {
		if _, err := e.pool.Exec(ctx, `TRUNCATE `+rows); err != nil {
			return 0, fmt.Errorf("truncate the business rows: %w", err)
		}
	}
	e.begin(ctx, q)
	clk := e.clockFor(q)
	c0 := clk.Read()
	var r float64
	var err error
	if d, ok := q.(queue.Driven); ok {
		r, err = d.RunEnqueue(ctx, name, sh.conc, sh.batch, e.p.Duration)
	} else {
		var jobs int64
		jobs, err = timed(ctx, e.p.Duration, sh.conc, e.enqueueOp(q, name))
		if st, ok := q.(queue.Settler); ok && err == nil && name == queue.EnqueueTx {
			err = st.Settle(ctx) // the window ends once every committed job is on the bus
		}
		r = float64(jobs) / time.Since(c0.At).Seconds()
	}
	c1 := clk.Read()
	if err != nil {
		return 0, err
	}
	wall := c1.At.Sub(c0.At)
	e.end(ctx, q, int64(r*wall.Seconds()+0.5), wall)
	t.cpu.Add(c0, c1)
	return r, nil
}

// enqueueOp is one producer's step of an in-process system: how many jobs it enqueued.
func (e *env) enqueueOp(q queue.Queue, name string) func(ctx context.Context, w int) (int, error) {
	switch name {
	case queue.EnqueueBatch:
		b, ok := q.(queue.BatchEnqueuer)
		if !ok {
			return unsupported(q, name)
		}
		// One batch of payloads, built outside the timed loop: no enqueue scenario reads the send
		// instant, so every call may carry the same bytes.
		ps := make([][]byte, e.p.Batch)
		for i := range ps {
			ps[i] = queue.Payload(time.Now().UnixNano())
		}
		return func(ctx context.Context, _ int) (int, error) { return len(ps), b.EnqueueBatch(ctx, ps) }
	case queue.EnqueueTx:
		rq, ok := q.(queue.RowEnqueuer)
		if !ok {
			return unsupported(q, name)
		}
		return func(ctx context.Context, _ int) (int, error) {
			return 1, rq.EnqueueWithRow(ctx, e.rowID.Add(1), queue.Payload(time.Now().UnixNano()))
		}
	}
	eq, ok := q.(queue.Enqueuer)
	if !ok {
		return unsupported(q, name)
	}
	return func(ctx context.Context, _ int) (int, error) {
		return 1, eq.Enqueue(ctx, queue.Payload(time.Now().UnixNano()))
	}
}

func unsupported(q queue.Queue, name string) func(context.Context, int) (int, error) {
	return func(context.Context, int) (int, error) {
		return 0, fmt.Errorf("bench: %s offers %s but has no method for it", q.Info().Name, name)
	}
}

// timed runs op from conc goroutines until d has passed and returns the jobs enqueued. op
// returns how many jobs it enqueued. The first error stops the run.
func timed(ctx context.Context, d time.Duration, conc int, op func(ctx context.Context, worker int) (int, error)) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var jobs atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n, err := op(ctx, w)
				if err != nil {
					if ctx.Err() == nil {
						first.CompareAndSwap(nil, &err)
					}
					cancel()
					return
				}
				jobs.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return 0, *p
	}
	if err := ctx.Err(); err != nil && jobs.Load() == 0 {
		return 0, err
	}
	return jobs.Load(), nil
}
