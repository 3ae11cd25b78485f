package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River is configured as its authors configure it for throughput: their benchmark
// (cmd/river/riverbench in riverqueue/river) sets FetchCooldown 2 ms and FetchPollInterval
// 20 ms, "much better than the client's default values" (100 ms and 1 s), and a queue's
// MaxWorkers in the thousands; here MaxWorkers is the run's W, the same as every system's.
// The completer is River's default batch completer.
const (
	RiverFetchCooldown     = 2 * time.Millisecond
	RiverFetchPollInterval = 20 * time.Millisecond
)

type riverArgs struct {
	T int64 `json:"t"`
}

func (riverArgs) Kind() string { return "emq_bench" }

// RiverQueue is River used as a library: InsertTx/Insert/InsertMany to enqueue, a started
// client with one queue to work.
type RiverQueue struct {
	pool   *pgxpool.Pool
	schema string
	rows   string
	h      atomic.Pointer[Handler]
	client *river.Client[pgx.Tx] // insert-only
	log    *slog.Logger
}

// NewRiverQueue migrates River's schema (rivermigrate, up) into schema and returns the queue.
// rows is the business table shared with the Oban-shaped queue.
func NewRiverQueue(ctx context.Context, pool *pgxpool.Pool, schema, rows string) (*RiverQueue, error) {
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
	q := &RiverQueue{pool: pool, schema: schema, rows: rows,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if q.client, err = q.newClient(0); err != nil {
		return nil, err
	}
	return q, nil
}

// newClient builds a client; workers 0 makes an insert-only one.
func (q *RiverQueue) newClient(workers int) (*river.Client[pgx.Tx], error) {
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
		FetchCooldown: RiverFetchCooldown, FetchPollInterval: RiverFetchPollInterval}
	if workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
	}
	c, err := river.NewClient(riverpgxv5.New(q.pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: river client: %w", err)
	}
	return c, nil
}

func (q *RiverQueue) Name() string   { return SysRiver }
func (q *RiverQueue) Engine() Engine { return Postgres }

func args(p []byte) (riverArgs, error) {
	t, err := sentAt(p)
	return riverArgs{T: t}, err
}

func (q *RiverQueue) Enqueue(ctx context.Context, p []byte) error {
	a, err := args(p)
	if err != nil {
		return err
	}
	_, err = q.client.Insert(ctx, a, nil)
	return err
}

func (q *RiverQueue) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	params := make([]river.InsertManyParams, len(ps))
	for i, p := range ps {
		a, err := args(p)
		if err != nil {
			return err
		}
		params[i] = river.InsertManyParams{Args: a}
	}
	_, err := q.client.InsertMany(ctx, params)
	return err
}

func (q *RiverQueue) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
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

func (q *RiverQueue) Fill(ctx context.Context, n int) error {
	return fillBatches(ctx, n, 1000, func(ctx context.Context, ps [][]byte) error {
		params := make([]river.InsertManyParams, len(ps))
		for i, p := range ps {
			a, err := args(p)
			if err != nil {
				return err
			}
			params[i] = river.InsertManyParams{Args: a}
		}
		_, err := q.client.InsertManyFast(ctx, params)
		return err
	})
}

// Drain starts a client on the backlog and counts River's completion events, which it emits
// once its completer has recorded the jobs completed (riverbench counts the same way).
func (q *RiverQueue) Drain(ctx context.Context, workers int, m *DrainMarks) error {
	c, err := q.newClient(workers)
	if err != nil {
		return err
	}
	events, cancel := c.SubscribeConfig(&river.SubscribeConfig{
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}, ChanSize: int(m.n) + 1024})
	defer cancel()
	h := Handler(func(int64) { m.Started() })
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
					errc <- fmt.Errorf("%w: river subscription closed", errIncomplete)
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
	werr := m.wait(ctx, errc)
	if err := stopRiver(c); werr == nil {
		werr = err
	}
	return werr
}

func (q *RiverQueue) Consume(ctx context.Context, workers int, h Handler) (func() error, error) {
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

func (q *RiverQueue) Reset(ctx context.Context) error {
	_, err := q.pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{q.schema, "river_job"}.Sanitize()+`, `+q.rows)
	return err
}

func (q *RiverQueue) Close() error { return nil }
