// Package busq is the EchoMQ reference bus (reference/bus) as a bench system: the plain bus, the
// bus whose handler has an exactly-once effect (reference/absorb), and the transactional pair
// through an outbox (reference/outbox).
package busq

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/bench/internal/vkadmin"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/absorb"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/outbox"
)

// Name is the bus as printed.
const Name = "bus"

// Lease is the consumer's lease in every scenario.
const Lease = 30 * time.Second

// Parked caps the consumer's workers blocked on the wake key: every parked client is visited
// by Valkey on each wake, so 256 parked connections cost the server more than the jobs do.
const Parked = 8

// Bus is the EchoMQ reference bus. Each Reset moves it to a fresh queue name and deletes the old
// queue's keys, so runs never see each other's jobs.
type Bus struct {
	b      *bus.Bus
	ob     *outbox.Outbox // the business transaction's outbox, relayed to the bus
	ab     *absorb.Absorber
	relay  relay
	admin  *connector.Conn // the harness's own connection, for cleanup only
	pool   *pgxpool.Pool   // for the business row of the transactional pair
	rows   string
	schema string
	seq    atomic.Int64
	queue  atomic.Pointer[string]
}

// Open opens the bus (the fence runs first) on addr, with group enqueue on: concurrent
// producers' enqueues that queue up while one is in flight go as one enqueue_batch, which is
// how a Go service drives the bus at its best (each call still returns after its own job).
// schema holds its outbox, its absorb records and the effects; rows is the business table.
func Open(ctx context.Context, addr string, pool *pgxpool.Pool, schema, rows string) (*Bus, error) {
	return open(ctx, addr, pool, schema, rows, true)
}

// OpenPlain opens the bus without group enqueue (each Enqueue its own script call): the tail
// breakdown's variant that takes the enqueue batcher's hop away.
func OpenPlain(ctx context.Context, addr string, pool *pgxpool.Pool, schema, rows string) (*Bus, error) {
	return open(ctx, addr, pool, schema, rows, false)
}

func open(ctx context.Context, addr string, pool *pgxpool.Pool, schema, rows string, batchEnqueue bool) (*Bus, error) {
	b, err := bus.Open(ctx, addr, bus.Options{BatchEnqueue: batchEnqueue})
	if err != nil {
		return nil, err
	}
	admin, err := connector.Dial(ctx, addr, connector.Options{})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bench: valkey admin connection: %w", err)
	}
	q := &Bus{b: b, admin: admin, pool: pool, rows: rows, schema: schema,
		ob: outbox.New(b, outbox.Options{Table: schema + ".emq_outbox"}),
		ab: absorb.New(pool, schema+".emq_absorbed")}
	if err := q.schemas(ctx); err != nil {
		q.Close()
		return nil, err
	}
	q.next()
	return q, nil
}

// relay runs the outbox's relay (reference/outbox) while the transactional scenario does: from
// its first EnqueueWithRow until Settle finds the outbox empty. Left running, its poll of the
// outbox table (every 5 ms) would load PostgreSQL and this process under every other system's
// measurement.
type relay struct {
	mu      sync.Mutex
	running atomic.Bool
	stop    func()
	done    chan error
}

func (r *relay) start(ob *outbox.Outbox, pool *pgxpool.Pool) {
	if r.running.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan error, 1)
	go func() { r.done <- ob.Run(ctx, pool) }()
	r.running.Store(true)
}

func (r *relay) halt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running.Load() {
		r.stop()
		<-r.done
		r.running.Store(false)
	}
}

func (q *Bus) schemas(ctx context.Context) error {
	if err := q.ob.Schema(ctx, q.pool); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := q.ab.Schema(ctx); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if _, err := q.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q.effects()+` (job_id text NOT NULL)`); err != nil {
		return fmt.Errorf("bench: effects table: %w", err)
	}
	return nil
}

// effects holds the exactly-once drain's effects: one row per job.
func (q *Bus) effects() string { return pgx.Identifier{q.schema, "effects"}.Sanitize() }

func (q *Bus) next() {
	name := fmt.Sprintf("bench-%d-%d", time.Now().UnixMilli()%1_000_000, q.seq.Add(1))
	q.queue.Store(&name)
}

func (q *Bus) name() string { return *q.queue.Load() }

// Version names the bundle by its digest: the scripts change while the bus is tuned, and a
// figure belongs to one set of them.
func Version() string {
	b, err := lua.Load()
	if err != nil {
		return "kit reference/bus (bundle unreadable: " + err.Error() + ")"
	}
	return "kit reference/bus, bundle " + b.Version() + " digest " + b.Digest()
}

func (q *Bus) Info() queue.Info {
	return queue.Info{Name: Name, Engine: queue.Valkey, Version: Version(), Runtime: "Go " + runtime.Version(),
		Settings: [][2]string{{"bus.Options", "BatchEnqueue: true (concurrent enqueues coalesce into enqueue_batch)"},
			{"consumer", fmt.Sprintf("bus.Consumer on the bus's one auto-pipelined connection, claiming and completing by their batchers (claim_batch/complete_batch, two calls in flight); at most %d idle slots park on the wake key, the rest wait in-process", Parked)},
			{"batches", "Bus.EnqueueBatch (enqueue_batch)"}},
		WithRow: "yes: an outbox row in it, relayed to the bus (reference/outbox)",
		Offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain,
			queue.DrainBacklog, queue.Latency},
		Docs: "bench/README.md and reference/bus's package documentation (BatchEnqueue, ConsumerOptions.Parked)",
		Wake: "park, don't poll: the enqueue script pushes a token on the queue's wake key, a parked worker's BLPOP returns with it and the worker claims"}
}

func (q *Bus) Enqueue(ctx context.Context, p []byte) error {
	_, err := q.b.Enqueue(ctx, q.name(), p)
	return err
}

func (q *Bus) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	msgs := make([]bus.Message, len(ps))
	for i, p := range ps {
		msgs[i] = bus.Message{Payload: p}
	}
	_, err := q.b.EnqueueBatch(ctx, q.name(), msgs)
	return err
}

// EnqueueWithRow writes the business row and an outbox row in one PostgreSQL transaction: as
// atomic as a Postgres queue's insert in the row's transaction. The relay (reference/outbox,
// running beside the producers) moves the job to the bus; Settle waits for it, and the
// scenario's window ends only once every committed job is on the bus.
func (q *Bus) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
	q.relay.start(q.ob, q.pool)
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+q.rows+` (id, note) VALUES ($1, 'order')`, id); err != nil {
			return err
		}
		_, err := q.ob.Add(ctx, tx, q.name(), p)
		return err
	})
}

// Settle returns once the outbox is empty: every committed job has reached the bus. The relay
// then stops until the next EnqueueWithRow.
func (q *Bus) Settle(ctx context.Context) error {
	err := queue.PollUntil(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
		return q.ob.Empty(ctx, q.pool)
	})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	q.relay.halt()
	return nil
}

func (q *Bus) Fill(ctx context.Context, n int) error {
	return queue.FillBatches(ctx, n, 500, q.EnqueueBatch)
}

// Drain runs the bus's own consumer with workers slots, as a service would: the slots share
// the bus's auto-pipelined connection and the consumer claims and completes by their batchers
// (batch scripts for whatever queued up). Its acks are not observable from a handler, so the
// end is read from the server: every job started, pending and active both empty (a completed
// job leaves nothing), polled every millisecond on the harness's own connection.
func (q *Bus) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	return q.drain(ctx, workers, m, nil)
}

// drain runs the consumer with effect (nil: none) inside the handler.
func (q *Bus) drain(ctx context.Context, workers int, m *queue.DrainMarks, effect bus.Handler) error {
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
		case <-m.Done(): // the stop's own noise
		default:
			report(fmt.Errorf("bench: bus consumer: "+logf, args...))
		}
	}, func(ctx context.Context, j *bus.Job) error {
		m.Started()
		started.Add(1)
		if _, err := queue.SentAt(j.Payload); err != nil {
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
		if err := q.pollEmpty(pctx, func() bool { return started.Load() >= m.N() }); err != nil {
			if pctx.Err() == nil {
				report(err)
			}
			return
		}
		m.AckAll()
	}()
	werr := m.Wait(ctx, errc)
	cancel()
	if err := stop(); werr == nil {
		werr = err
	}
	if werr == nil && started.Load() != m.N() {
		werr = fmt.Errorf("%w: %d handler starts for %d jobs", queue.ErrIncomplete, started.Load(), m.N())
	}
	return werr
}

// pollEmpty returns once ready() holds and the queue has no pending and no active job.
func (q *Bus) pollEmpty(ctx context.Context, ready func() bool) error {
	name := q.name()
	pending, active := vkadmin.Cmd("ZCARD", "emq:{"+name+"}:pending"), vkadmin.Cmd("ZCARD", "emq:{"+name+"}:active")
	err := queue.PollUntil(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
		if !ready() {
			return false, nil
		}
		return vkadmin.AllZero(ctx, q.admin, pending, active)
	})
	if err != nil {
		return fmt.Errorf("bench: poll %s: %w", name, err)
	}
	return nil
}

// Consume runs the bus's own consumer (workers park on the wake key when idle).
func (q *Bus) Consume(ctx context.Context, workers int, h queue.Handler) (func() error, error) {
	var bad atomic.Pointer[error]
	stop, err := q.consume(ctx, workers, nil, func(ctx context.Context, j *bus.Job) error {
		t, err := queue.SentAt(j.Payload)
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

func (q *Bus) consume(ctx context.Context, workers int, logf func(string, ...any), h bus.Handler) (func() error, error) {
	c, err := q.b.Consumer(q.name(), bus.ConsumerOptions{Concurrency: workers, Parked: Parked, Lease: bus.Ms(Lease), Grace: 5 * time.Second, Logf: logf}, h)
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

// Reset deletes the current queue's keys and moves to a fresh queue name (and stops a relay
// that a failed transactional repeat left running).
func (q *Bus) Reset(ctx context.Context) error {
	q.relay.halt()
	old := q.name()
	q.next()
	return vkadmin.UnlinkMatch(ctx, q.admin, "emq:{"+old+"}:*")
}

func (q *Bus) Close() error {
	q.relay.halt()
	q.admin.Close()
	return q.b.Close()
}

// Absorb is the bus whose handler has an exactly-once effect (reference/absorb): one
// PostgreSQL transaction per job records its id and writes the effect row. Only Drain is
// measured: what matching a Postgres queue's transactional handler costs the bus.
type Absorb struct{ *Bus }

// AbsorbName names the bus with an absorbing handler.
const AbsorbName = "bus+absorb"

func (q Absorb) Info() queue.Info {
	return queue.Info{Name: AbsorbName, Engine: queue.ValkeyPostgres, Version: Version(), Runtime: "Go " + runtime.Version(),
		Settings: [][2]string{{"handler", "reference/absorb: the job id and the effect row in one PostgreSQL transaction"}},
		WithRow:  "the handler's effect and the job id in one transaction", Offers: []string{queue.DrainOnce}}
}

func (q Absorb) Reset(ctx context.Context) error {
	if _, err := q.pool.Exec(ctx, `TRUNCATE `+q.effects()+`, `+pgx.Identifier{q.schema, "emq_absorbed"}.Sanitize()); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return q.Bus.Reset(ctx)
}

// Drain drains with the absorbing handler and then checks the effect happened once per job.
func (q Absorb) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	h := q.ab.Handler(func(ctx context.Context, tx pgx.Tx, j *bus.Job) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+q.effects()+` (job_id) VALUES ($1)`, j.ID)
		return err
	})
	if err := q.drain(ctx, workers, m, h); err != nil {
		return err
	}
	var rows, ids int64
	if err := q.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT job_id) FROM `+q.effects()).Scan(&rows, &ids); err != nil {
		return fmt.Errorf("bench: effects: %w", err)
	}
	if rows != m.N() || ids != m.N() {
		return fmt.Errorf("bench: %d effects for %d ids after draining %d jobs: not exactly once", rows, ids, m.N())
	}
	return nil
}

// Close leaves the shared bus to its owner.
func (q Absorb) Close() error { return nil }
