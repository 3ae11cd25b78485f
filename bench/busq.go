package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/reference/absorb"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/outbox"
	"github.com/echomq/kit/reference/resp"
)

const busLease = 30 * time.Second

// busParked caps the consumer's workers blocked on the wake key: every parked client is visited
// by Valkey on each wake, so 256 parked connections cost the server more than the jobs do.
const busParked = 8

// BusQueue is the EchoMQ reference bus (package reference/bus). Each Reset moves it to a fresh
// queue name and deletes the old queue's keys, so runs never see each other's jobs.
type BusQueue struct {
	b         *bus.Bus
	ob        *outbox.Outbox // the business transaction's outbox, relayed to the bus
	ab        *absorb.Absorber
	stopRelay func()
	relayed   chan error
	admin     *connector.Conn // the harness's own connection, for cleanup only
	pool      *pgxpool.Pool   // for the business row of the non-atomic pair
	rows      string
	seq       atomic.Int64
	queue     atomic.Pointer[string]
}

// NewBusQueue opens the bus (the fence runs first) on addr, with group enqueue on: concurrent
// producers' enqueues that queue up while one is in flight go as one enqueue_batch, which is
// how a Go service drives the bus at its best (each call still returns after its own job).
func NewBusQueue(ctx context.Context, addr string, pool *pgxpool.Pool, rows string) (*BusQueue, error) {
	b, err := bus.Open(ctx, addr, bus.Options{BatchEnqueue: true})
	if err != nil {
		return nil, err
	}
	admin, err := connector.Dial(ctx, addr, connector.Options{})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bench: valkey admin connection: %w", err)
	}
	q := &BusQueue{b: b, admin: admin, pool: pool, rows: rows,
		ob: outbox.New(b, outbox.Options{Table: obanPrefix + ".emq_outbox"}),
		ab: absorb.New(pool, obanPrefix+".emq_absorbed")}
	if err := q.ob.Schema(ctx, pool); err != nil {
		q.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := q.ab.Schema(ctx); err != nil {
		q.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+effectsTable+` (job_id text NOT NULL)`); err != nil {
		q.Close()
		return nil, fmt.Errorf("bench: effects table: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q.stopRelay, q.relayed = cancel, make(chan error, 1)
	go func() { q.relayed <- q.ob.Run(rctx, pool) }()
	q.next()
	return q, nil
}

// effectsTable holds the exactly-once drain's effects: one row per job.
var effectsTable = pgx.Identifier{obanPrefix, "effects"}.Sanitize()

func (q *BusQueue) next() {
	name := fmt.Sprintf("bench-%d-%d", time.Now().UnixMilli()%1_000_000, q.seq.Add(1))
	q.queue.Store(&name)
}

func (q *BusQueue) name() string   { return *q.queue.Load() }
func (q *BusQueue) Name() string   { return SysBus }
func (q *BusQueue) Engine() Engine { return Valkey }

func (q *BusQueue) Enqueue(ctx context.Context, p []byte) error {
	_, err := q.b.Enqueue(ctx, q.name(), p)
	return err
}

func (q *BusQueue) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	msgs := make([]bus.Message, len(ps))
	for i, p := range ps {
		msgs[i] = bus.Message{Payload: p}
	}
	_, err := q.b.EnqueueBatch(ctx, q.name(), msgs)
	return err
}

// EnqueueWithRow writes the business row and an outbox row in one PostgreSQL transaction: as
// atomic as Oban's insert in the row's transaction. The relay (reference/outbox, running beside
// the producers) moves the job to the bus; Settle waits for it, and the scenario's window ends
// only once every committed job is on the bus.
func (q *BusQueue) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+q.rows+` (id, note) VALUES ($1, 'order')`, id); err != nil {
			return err
		}
		_, err := q.ob.Add(ctx, tx, q.name(), p)
		return err
	})
}

// Settle returns once the outbox is empty: every committed job has reached the bus.
func (q *BusQueue) Settle(ctx context.Context) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		empty, err := q.ob.Empty(ctx, q.pool)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if empty {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (q *BusQueue) Fill(ctx context.Context, n int) error {
	return fillBatches(ctx, n, 500, q.EnqueueBatch)
}

// Drain runs the bus's own consumer with workers slots, as a service would: the slots share
// the bus's auto-pipelined connection and the consumer claims and completes by their batchers
// (batch scripts for whatever queued up). Its acks are not observable from a handler, so the
// end is read from the server: every job started, pending and active both empty (a completed
// job leaves nothing), polled every millisecond on the harness's own connection.
func (q *BusQueue) Drain(ctx context.Context, workers int, m *DrainMarks) error {
	return q.drain(ctx, workers, m, nil)
}

// drain runs the consumer with effect (nil: none) inside the handler.
func (q *BusQueue) drain(ctx context.Context, workers int, m *DrainMarks, effect bus.Handler) error {
	errc := make(chan error, 1)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	var started atomic.Int64
	stop, err := q.consume(ctx, workers, func(logf string, args ...any) {
		select {
		case <-m.done: // the stop's own noise
		default:
			report(fmt.Errorf("bench: bus consumer: "+logf, args...))
		}
	}, func(ctx context.Context, j *bus.Job) error {
		m.Started()
		started.Add(1)
		if _, err := sentAt(j.Payload); err != nil {
			report(err)
			return bus.Permanent(err)
		}
		if effect != nil {
			return effect(ctx, j)
		}
		return nil
	})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := q.pollEmpty(pctx, func() bool { return started.Load() >= m.n }); err != nil {
			if pctx.Err() == nil {
				report(err)
			}
			return
		}
		m.AckAll()
	}()
	werr := m.wait(ctx, errc)
	cancel()
	if err := stop(); werr == nil {
		werr = err
	}
	if werr == nil && started.Load() != m.n {
		werr = fmt.Errorf("%w: %d handler starts for %d jobs", errIncomplete, started.Load(), m.n)
	}
	return werr
}

// pollEmpty returns once ready() holds and the queue has no pending and no active job.
func (q *BusQueue) pollEmpty(ctx context.Context, ready func() bool) error {
	name := q.name()
	pending, active := "emq:{"+name+"}:pending", "emq:{"+name+"}:active"
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if !ready() {
			continue
		}
		vs, err := q.admin.Pipeline(ctx, connector.Cmd{Args: []any{"ZCARD", pending}}, connector.Cmd{Args: []any{"ZCARD", active}})
		if err != nil {
			return fmt.Errorf("bench: poll %s: %w", name, err)
		}
		if len(vs) == 2 && vs[0].Int == 0 && vs[1].Int == 0 {
			return nil
		}
	}
}

// Consume runs the bus's own consumer (workers park on the wake key when idle).
func (q *BusQueue) Consume(ctx context.Context, workers int, h Handler) (func() error, error) {
	var bad atomic.Pointer[error]
	stop, err := q.consume(ctx, workers, nil, func(ctx context.Context, j *bus.Job) error {
		t, err := sentAt(j.Payload)
		if err != nil {
			bad.CompareAndSwap(nil, &err)
			return bus.Permanent(err)
		}
		h(t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		err := stop()
		if p := bad.Load(); p != nil {
			return *p
		}
		return err
	}, nil
}

func (q *BusQueue) consume(ctx context.Context, workers int, logf func(string, ...any), h bus.Handler) (func() error, error) {
	c, err := q.b.Consumer(q.name(), bus.ConsumerOptions{Concurrency: workers, Parked: busParked, Lease: busLease, Grace: 5 * time.Second, Logf: logf}, h)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			cancel()
			rerr = <-done
		})
		return rerr
	}, nil
}

// Reset deletes the current queue's keys and moves to a fresh queue name.
func (q *BusQueue) Reset(ctx context.Context) error {
	old := q.name()
	q.next()
	return unlinkMatch(ctx, q.admin, "emq:{"+old+"}:*")
}

func (q *BusQueue) Close() error {
	if q.stopRelay != nil {
		q.stopRelay()
		<-q.relayed
	}
	q.admin.Close()
	return q.b.Close()
}

// AbsorbQueue is the bus whose handler has an exactly-once effect (reference/absorb): one
// PostgreSQL transaction per job records its id and writes the effect row. Only Drain is
// measured: what matching a Postgres queue's transactional handler costs the bus.
type AbsorbQueue struct{ *BusQueue }

// SysBusAbsorb names the bus with an absorbing handler.
const SysBusAbsorb = "bus+absorb"

func (q AbsorbQueue) Name() string   { return SysBusAbsorb }
func (q AbsorbQueue) Engine() Engine { return "valkey+postgres" }

func (q AbsorbQueue) Reset(ctx context.Context) error {
	if _, err := q.pool.Exec(ctx, `TRUNCATE `+effectsTable+`, `+pgx.Identifier{obanPrefix, "emq_absorbed"}.Sanitize()); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return q.BusQueue.Reset(ctx)
}

// Drain drains with the absorbing handler and then checks the effect happened once per job.
func (q AbsorbQueue) Drain(ctx context.Context, workers int, m *DrainMarks) error {
	h := q.ab.Handler(func(ctx context.Context, tx pgx.Tx, j *bus.Job) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+effectsTable+` (job_id) VALUES ($1)`, j.ID)
		return err
	})
	if err := q.drain(ctx, workers, m, h); err != nil {
		return err
	}
	var rows, ids int64
	if err := q.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT job_id) FROM `+effectsTable).Scan(&rows, &ids); err != nil {
		return fmt.Errorf("bench: effects: %w", err)
	}
	if rows != m.n || ids != m.n {
		return fmt.Errorf("bench: %d effects for %d ids after draining %d jobs: not exactly once", rows, ids, m.n)
	}
	return nil
}

// trivialScript is the script of the Valkey ceiling.
var trivialScript = connector.NewScript("emq_bench_ceiling", "return 1")

// valkeyCeilingBatch runs one pipelined batch of size EVALSHAs and checks every reply.
func valkeyCeilingBatch(ctx context.Context, c *connector.Conn, b *connector.Batch, size int, dst []resp.Value) error {
	b.Reset()
	for range size {
		b.EvalSha(trivialScript, nil)
	}
	vals, err := c.Exec(ctx, b, dst[:0])
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v.Int != 1 {
			return fmt.Errorf("bench: ceiling script replied %v", v)
		}
	}
	return nil
}

// ServerTime is Valkey's own account of the bus's scripts during a measurement, from
// INFO commandstats (reset before, read after): how much of the wall time the server's one
// main thread spent inside EVALSHA.
type ServerTime struct {
	Calls       int64   `json:"evalsha_calls"`
	UsecPerCall float64 `json:"usec_per_call"`
	UsecPerJob  float64 `json:"usec_per_job"`
	ScriptShare float64 `json:"script_share"` // script µs ÷ wall µs: 1 means the main thread did nothing else
}

// ScriptCost is one bundle script's server time, measured alone on Jobs jobs.
type ScriptCost struct {
	Script      string  `json:"script"`
	Jobs        int     `json:"jobs"`
	Calls       int64   `json:"calls"`
	UsecPerCall float64 `json:"usec_per_call"`
	UsecPerJob  float64 `json:"usec_per_job"`
}

func resetStats(ctx context.Context, c *connector.Conn) error {
	if _, err := c.Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
		return fmt.Errorf("bench: CONFIG RESETSTAT: %w", err)
	}
	return nil
}

// evalshaStats reads cmdstat_evalsha's calls and usec.
func evalshaStats(ctx context.Context, c *connector.Conn) (calls, usec int64, err error) {
	v, err := c.Do(ctx, "INFO", "commandstats")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: INFO commandstats: %w", err)
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				calls, err = strconv.ParseInt(val, 10, 64)
			case "usec":
				usec, err = strconv.ParseInt(val, 10, 64)
			}
			if err != nil {
				return 0, 0, fmt.Errorf("bench: cmdstat_evalsha %q: %w", rest, err)
			}
		}
		return calls, usec, nil
	}
	return 0, 0, nil // no EVALSHA since the reset
}

// profileScripts measures the drain's scripts alone, on k jobs per step, resetting the
// server's statistics between steps: the batch scripts the consumer's batchers use
// (enqueue_batch by EnqueueBatch, claim_batch and complete_batch in groups of up to group), then
// the single-job claim and complete (conc callers on the shared connection).
func (q *BusQueue) profileScripts(ctx context.Context, k, group, conc int) ([]ScriptCost, error) {
	if err := q.Reset(ctx); err != nil {
		return nil, err
	}
	defer q.Reset(context.WithoutCancel(ctx))
	group = max(1, min(group, bus.MaxBatch))
	var out []ScriptCost
	step := func(name string, run func() error) error {
		if err := resetStats(ctx, q.admin); err != nil {
			return err
		}
		if err := run(); err != nil {
			return fmt.Errorf("bench: profile %s: %w", name, err)
		}
		calls, usec, err := evalshaStats(ctx, q.admin)
		if err != nil {
			return err
		}
		if calls == 0 {
			return fmt.Errorf("bench: profile %s: no EVALSHA reached the server", name)
		}
		out = append(out, ScriptCost{Script: name, Jobs: k, Calls: calls,
			UsecPerCall: float64(usec) / float64(calls), UsecPerJob: float64(usec) / float64(k)})
		return nil
	}
	name := q.name()
	if err := step("enqueue_batch", func() error { return q.Fill(ctx, k) }); err != nil {
		return nil, err
	}
	var jobs []*bus.Job
	if err := step("claim_batch", func() error {
		for len(jobs) < k {
			js, err := q.b.ClaimBatch(ctx, name, busLease, min(group, k-len(jobs)))
			if err != nil {
				return err
			}
			if len(js) == 0 {
				return fmt.Errorf("%w: the queue ran dry after %d claims", errIncomplete, len(jobs))
			}
			jobs = append(jobs, js...)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := step("complete_batch", func() error {
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
	}); err != nil {
		return nil, err
	}
	if err := q.Fill(ctx, k); err != nil {
		return nil, err
	}
	singles := make([]*bus.Job, k)
	if err := step("claim", func() error {
		return parallel(k, conc, func(i int) error {
			j, err := q.b.Claim(ctx, name, busLease)
			if err == nil && j == nil {
				err = fmt.Errorf("%w: claim %d found the queue empty", errIncomplete, i)
			}
			singles[i] = j
			return err
		})
	}); err != nil {
		return nil, err
	}
	if err := step("complete", func() error {
		return parallel(k, conc, func(i int) error { return singles[i].Complete(ctx) })
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// parallel runs do(0..k-1) from conc goroutines and returns the first error.
func parallel(k, conc int, do func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < k && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}
