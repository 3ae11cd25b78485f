// Package riverq is River (github.com/riverqueue/river) as a bench system, on PostgreSQL through
// riverpgxv5, configured as its authors configure it for throughput.
package riverq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/echomq/kit/bench/queue"
)

// Name is River as printed.
const Name = "river"

// River is configured as its authors configure it for throughput: their benchmark
// (cmd/river/riverbench in riverqueue/river) sets FetchCooldown 2 ms and FetchPollInterval
// 20 ms, "much better than the client's default values" (100 ms and 1 s), and a queue's
// MaxWorkers in the thousands; here MaxWorkers is the run's W, the same as every system's.
// The completer is River's default batch completer.
const (
	FetchCooldown     = 2 * time.Millisecond
	FetchPollInterval = 20 * time.Millisecond
)

type riverArgs struct {
	T int64 `json:"t"`
}

func (riverArgs) Kind() string { return "emq_bench" }

// RiverQueue is River used as a library: InsertTx/Insert/InsertMany to enqueue, a started
// client with one queue to work.
type River struct {
	pool    *pgxpool.Pool
	schema  string
	rows    string
	workers int
	h       atomic.Pointer[queue.Handler]
	client  *river.Client[pgx.Tx] // insert-only
	log     *slog.Logger
}

// New migrates River's schema (rivermigrate, up) into the bench's schema with "_river" appended
// and returns the queue, working with s.Workers.
func New(ctx context.Context, s queue.Setup) (queue.Queue, error) {
	pool, schema := s.Pool, s.Schema+"_river"
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("bench: river schema: %w", err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return nil, fmt.Errorf("bench: rivermigrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("bench: rivermigrate up: %w", err)
	}
	q := &River{pool: pool, schema: schema, rows: s.Rows, workers: s.Workers,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if q.client, err = q.newClient(0); err != nil {
		return nil, err
	}
	return q, nil
}

// newClient builds a client; workers 0 makes an insert-only one.
func (q *River) newClient(workers int) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(ctx context.Context, j *river.Job[riverArgs]) error {
		if h := q.h.Load(); h != nil {
			(*h)(j.Args.T)
		}
		return nil
	}))
	// FetchCooldown also paces the inserting client's notifications (its insert notify limiter),
	// so the insert-only client takes it too.
	cfg := &river.Config{Schema: q.schema, Workers: ws, Logger: q.log,
		FetchCooldown: FetchCooldown, FetchPollInterval: FetchPollInterval}
	if workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
	}
	c, err := river.NewClient(riverpgxv5.New(q.pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: river client: %w", err)
	}
	return c, nil
}

func (q *River) Info() queue.Info {
	return queue.Info{Name: Name, Engine: queue.Postgres, Version: "github.com/riverqueue/river " + queue.ModuleVersion("github.com/riverqueue/river") + " (riverpgxv5)",
		Runtime: "Go " + runtime.Version(),
		Settings: [][2]string{{"MaxWorkers", strconv.Itoa(q.workers)}, {"FetchCooldown", FetchCooldown.String()}, {"FetchPollInterval", FetchPollInterval.String()},
			{"completer", "River's default batch completer"}, {"why", "River's own benchmark settings (cmd/river/riverbench)"}},
		WithRow: "yes: the job row in the same transaction (InsertTx)",
		Offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain,
			queue.DrainBacklog, queue.Latency},
		Docs: "riverqueue.com/docs/benchmarks (the settings of River's own bench, cmd/river/riverbench)",
		Wake: "LISTEN/NOTIFY: an insert notifies its queue at most once per FetchCooldown (2 ms) and the producer fetches at most once per FetchCooldown, else every FetchPollInterval (20 ms)"}
}

func args(p []byte) (riverArgs, error) {
	t, err := queue.SentAt(p)
	return riverArgs{T: t}, err
}

func (q *River) Enqueue(ctx context.Context, p []byte) error {
	a, err := args(p)
	if err != nil {
		return err
	}
	_, err = q.client.Insert(ctx, a, nil)
	return err
}

func (q *River) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	params, err := manyParams(ps)
	if err == nil {
		_, err = q.client.InsertMany(ctx, params)
	}
	return err
}

func manyParams(ps [][]byte) ([]river.InsertManyParams, error) {
	params := make([]river.InsertManyParams, len(ps))
	for i, p := range ps {
		a, err := args(p)
		if err != nil {
			return nil, err
		}
		params[i] = river.InsertManyParams{Args: a}
	}
	return params, nil
}

func (q *River) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
	a, err := args(p)
	if err != nil {
		return err
	}
	tx, err := q.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO `+q.rows+` (id, note) VALUES ($1, 'order')`, id); err != nil {
		return err
	}
	if _, err := q.client.InsertTx(ctx, tx, a, nil); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (q *River) Fill(ctx context.Context, n int) error {
	return queue.FillBatches(ctx, n, 1000, func(ctx context.Context, ps [][]byte) error {
		params, err := manyParams(ps)
		if err == nil {
			_, err = q.client.InsertManyFast(ctx, params)
		}
		return err
	})
}

// Drain starts a client on the backlog and counts River's completion events, which it emits
// once its completer has recorded the jobs completed (riverbench counts the same way).
func (q *River) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	c, err := q.newClient(workers)
	if err != nil {
		return err
	}
	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}, ChanSize: int(m.N()) + 1024})
	defer cancel()
	h := queue.Handler(func(int64) { m.Started() })
	q.h.Store(&h)
	defer q.h.Store(nil)
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("bench: river start: %w", err)
	}
	errc := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			select {
			case <-quit:
				return
			case e, ok := <-events:
				if !ok {
					errc <- fmt.Errorf("%w: river subscription closed", queue.ErrIncomplete)
					return
				}
				if e.Kind != river.EventKindJobCompleted {
					errc <- fmt.Errorf("bench: river job %d failed", e.Job.ID)
					return
				}
				m.Ack()
			}
		}
	}()
	werr := m.Wait(ctx, errc)
	if err := stopRiver(c); werr == nil {
		werr = err
	}
	return werr
}

func (q *River) Consume(ctx context.Context, workers int, h queue.Handler) (func() error, error) {
	c, err := q.newClient(workers)
	if err != nil {
		return nil, err
	}
	q.h.Store(&h)
	if err := c.Start(ctx); err != nil {
		q.h.Store(nil)
		return nil, fmt.Errorf("bench: river start: %w", err)
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			err = stopRiver(c)
			q.h.Store(nil)
		})
		return err
	}, nil
}

func stopRiver(c *river.Client[pgx.Tx]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		return fmt.Errorf("bench: river stop: %w", err)
	}
	return nil
}

func (q *River) Reset(ctx context.Context) error {
	_, err := q.pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{q.schema, "river_job"}.Sanitize()+`, `+q.rows)
	return err
}

func (q *River) Close() error { return nil }
