// Package obanq is the Oban-shaped queue as a bench system: the kit's model of Oban's Basic
// engine (package oban) driven by a model of Oban's producer. It is a model of the kit's making,
// not Oban, which cannot be installed here.
package obanq

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/oban"
)

// Name is the model as printed.
const Name = "oban-shaped"

// Oban's producer debounces dispatches by dispatch_cooldown (5 ms, lib/oban/queue/producer.ex
// at v2.18.3); the stager re-notifies queues with available jobs every second
// (lib/oban/stager.ex), which is the producer's only polling.
const (
	DispatchCooldown = 5 * time.Millisecond
	stageInterval    = time.Second
	obanQueue        = "bench"
	obanNode         = "emq-bench"
)

// ObanQueue is the Oban-shaped queue: package oban's engine driven by a model of Oban's
// producer (LISTEN for insert notifications, debounced fetch of limit−running jobs, one task per
// job, one ack UPDATE per job).
type Model struct {
	pool    *pgxpool.Pool
	eng     *oban.Engine
	url     string
	prefix  string
	rows    string // the business table
	workers int
}

// New migrates the Oban schema under the bench's own schema and returns the model, working with
// s.Workers. Notifications are on, as in Oban's default configuration.
func New(ctx context.Context, s queue.Setup) (queue.Queue, error) {
	if err := oban.MigratePrefix(ctx, s.Pool, s.Schema); err != nil {
		return nil, err
	}
	eng, err := oban.New(s.Pool, oban.Config{Prefix: s.Schema, Notify: true})
	if err != nil {
		return nil, err
	}
	return &Model{pool: s.Pool, eng: eng, url: s.PGURL, prefix: s.Schema, rows: s.Rows, workers: s.Workers}, nil
}

func (q *Model) Info() queue.Info {
	return queue.Info{Name: Name, Engine: queue.Postgres, Model: true, Runtime: "Go " + runtime.Version(),
		Version: "kit oban package: a model of Oban 2.18.3's Basic engine SQL, schema v12, notifications on (not Oban)",
		Settings: [][2]string{{"producer model: limit", strconv.Itoa(q.workers)}, {"dispatch_cooldown", DispatchCooldown.String()},
			{"fetch", "limit−running per dispatch"}, {"ack", "one UPDATE (commit) per job before the slot frees"}},
		WithRow: "yes: the job row in the same transaction (InsertTx)",
		// The backlog axis asks how real Postgres queues slow as their table grows; the model is
		// measured in the drain.
		Offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain, queue.Latency},
		Docs:   "oban/README.md (the model: which Oban 2.18.3 source file each behaviour follows)",
		Wake:   "LISTEN/NOTIFY: an insert's notification starts the producer's dispatch, at most once per dispatch_cooldown (5 ms)"}
}
func (q *Model) job(p []byte) oban.Job {
	return oban.Job{Queue: obanQueue, Worker: "Bench.Worker", Args: p}
}

func (q *Model) Enqueue(ctx context.Context, p []byte) error {
	_, err := q.eng.Insert(ctx, q.job(p))
	return err
}

func (q *Model) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	jobs := make([]oban.Job, len(ps))
	for i, p := range ps {
		jobs[i] = q.job(p)
	}
	got, err := q.eng.InsertAll(ctx, jobs)
	if err == nil && len(got) != len(jobs) {
		err = fmt.Errorf("bench: oban insert_all stored %d of %d", len(got), len(jobs))
	}
	return err
}

func (q *Model) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
	tx, err := q.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO `+q.rows+` (id, note) VALUES ($1, 'order')`, id); err != nil {
		return err
	}
	if _, err := q.eng.InsertTx(ctx, tx, q.job(p)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (q *Model) Fill(ctx context.Context, n int) error {
	return queue.FillBatches(ctx, n, 1000, q.EnqueueBatch)
}

// Drain runs the producer model with limit workers on the backlog; a job counts once its ack
// UPDATE has committed.
func (q *Model) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	p := q.producer(workers, func(int64) { m.Started() })
	p.onAck = m.Ack
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.run(ctx); err != nil {
			errc <- err
		}
	}()
	werr := m.Wait(ctx, errc)
	cancel()
	<-done
	return werr
}

func (q *Model) Consume(ctx context.Context, workers int, h queue.Handler) (func() error, error) {
	p := q.producer(workers, h)
	ln, err := pgx.Connect(ctx, q.url)
	if err != nil {
		return nil, fmt.Errorf("bench: oban listener: %w", err)
	}
	if _, err := ln.Exec(ctx, `LISTEN `+pgx.Identifier{q.prefix + ".oban_insert"}.Sanitize()); err != nil {
		ln.Close(ctx)
		return nil, fmt.Errorf("bench: oban listen: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the notifier: an insert notification for our queue schedules a dispatch
		defer wg.Done()
		defer ln.Close(context.Background())
		want := `{"queue":"` + obanQueue + `"}`
		for {
			n, err := ln.WaitForNotification(ctx)
			if err != nil {
				return
			}
			if n.Payload == want {
				p.kick()
			}
		}
	}()
	var runErr error
	go func() {
		defer wg.Done()
		runErr = p.run(ctx)
	}()
	return func() error {
		cancel()
		wg.Wait()
		return runErr
	}, nil
}

func (q *Model) Reset(ctx context.Context) error {
	_, err := q.pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{q.prefix, "oban_jobs"}.Sanitize()+`, `+q.rows)
	return err
}

func (q *Model) Close() error { return nil }

// obanProducer models Oban.Queue.Producer for one queue with a concurrency limit.
type obanProducer struct {
	eng     *oban.Engine
	limit   int
	h       queue.Handler
	onAck   func() // after each committed ack; nil for none
	events  chan struct{}
	running atomic.Int64
	failed  atomic.Pointer[error]
	tasks   sync.WaitGroup
}

func (q *Model) producer(limit int, h queue.Handler) *obanProducer {
	return &obanProducer{eng: q.eng, limit: limit, h: h, events: make(chan struct{}, 1)}
}

func (p *obanProducer) kick() {
	select {
	case p.events <- struct{}{}:
	default:
	}
}

// run dispatches until ctx ends or a job fails.
func (p *obanProducer) run(ctx context.Context) error {
	defer p.tasks.Wait()
	stage := time.NewTicker(stageInterval)
	defer stage.Stop()
	p.kick() // a producer dispatches once at start
	for {
		if err := p.failed.Load(); err != nil {
			return *err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.events:
		case <-stage.C:
		}
		// schedule_dispatch: one timer; events arriving meanwhile ride on this dispatch.
		if !queue.Sleep(ctx, DispatchCooldown) {
			return nil
		}
		select {
		case <-p.events:
		default:
		}
		if err := p.dispatch(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (p *obanProducer) dispatch(ctx context.Context) error {
	demand := p.limit - int(p.running.Load())
	if demand <= 0 {
		return nil
	}
	jobs, err := p.eng.Fetch(ctx, obanQueue, demand, obanNode)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		p.running.Add(1)
		p.tasks.Add(1)
		go func() {
			defer p.tasks.Done()
			if t, err := queue.SentAt(j.Args); err == nil {
				p.h(t)
			} else {
				p.fail(err)
			}
			// Acks run to completion even when the run is being stopped, as Oban's executor does.
			err := p.eng.Complete(context.WithoutCancel(ctx), j.ID)
			if err != nil {
				p.fail(err)
			}
			p.running.Add(-1)
			if err == nil && p.onAck != nil {
				p.onAck()
			}
			p.kick() // a finished job frees a slot: Oban dispatches again
		}()
	}
	return nil
}

func (p *obanProducer) fail(err error) {
	p.failed.CompareAndSwap(nil, &err)
	p.kick()
}
