package absorb_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/absorb"
	"github.com/echomq/kit/reference/bus"
)

type world struct {
	b      *bus.Bus
	pool   *pgxpool.Pool
	a      *absorb.Absorber
	effect string // the effects table: one row per effect
}

func setup(t *testing.T) (context.Context, *world) {
	t.Helper()
	// No deadline: a test's work takes what a busy machine gives it; a hang is the go test
	// -timeout's to report.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	vk, pg := enginestest.Valkey(t), enginestest.Postgres(t)
	b, err := bus.Open(ctx, vk.Addr, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pool, err := pgxpool.New(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := fmt.Sprintf("absorb_%d", time.Now().UnixNano())
	w := &world{b: b, pool: pool, a: absorb.New(pool, schema+".emq_absorbed"), effect: schema + ".effects"}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+w.effect+" (job_id text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	if err := w.a.Schema(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, w
}

// effect writes one row per run: a second run for one id would show as a second row.
func (w *world) effectFn(ctx context.Context, tx pgx.Tx, j *bus.Job) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+w.effect+" (job_id) VALUES ($1)", j.ID)
	return err
}

func (w *world) effects(t *testing.T, ctx context.Context) (rows, ids int) {
	t.Helper()
	if err := w.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT job_id) FROM "+w.effect).Scan(&rows, &ids); err != nil {
		t.Fatal(err)
	}
	return rows, ids
}

// The drill: a consumer commits the effect, dies before its complete reaches the bus, the lease
// passes, the reaper returns the job, and the redelivery finds it absorbed: one effect, one job.
func TestRedeliveryAfterCrashHasOneEffect(t *testing.T) {
	ctx, w := setup(t)
	e, err := w.b.Enqueue(ctx, "payments", []byte("pay 10"))
	if err != nil {
		t.Fatal(err)
	}
	h := w.a.Handler(w.effectFn)
	first, err := w.b.Claim(ctx, "payments", bus.Ms(100*time.Millisecond))
	if err != nil || first == nil {
		t.Fatalf("claim: %v %v", first, err)
	}
	if err := h(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The crash: no complete. The lease passes on the server's clock; the reaper returns it.
	time.Sleep(150 * time.Millisecond)
	if n, err := w.b.Reap(ctx, "payments", 10, 100); err != nil || n != 1 {
		t.Fatalf("reap: %d %v", n, err)
	}
	second, err := w.b.Claim(ctx, "payments", bus.Ms(30*time.Second))
	if err != nil || second == nil || second.ID != e.ID || second.Token != 2 {
		t.Fatalf("redelivery: %+v %v", second, err)
	}
	if err := h(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := second.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, _ := w.effects(t, ctx); rows != 1 {
		t.Fatalf("%d effects for one job delivered twice, want 1", rows)
	}
	if ok, err := w.a.Absorbed(ctx, "payments", e.ID); err != nil || !ok {
		t.Fatalf("absorbed: %v %v", ok, err)
	}
}

var errCrash = errors.New("crashed after the commit")

// Under a consumer, every third job "crashes" after its effect committed (the handler errors,
// so the bus redelivers it): every job runs its effect exactly once and every job completes.
func TestConsumerWithRedeliveriesHasExactlyOneEffectPerJob(t *testing.T) {
	ctx, w := setup(t)
	const n = 150
	for i := range n {
		if _, err := w.b.Enqueue(ctx, "payments", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	h := w.a.Handler(w.effectFn)
	var crashed, runs atomic.Int64
	var done atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	c, err := w.b.Consumer("payments", bus.ConsumerOptions{Concurrency: 8, Lease: bus.Ms(5 * time.Second),
		Backoff: func(int) time.Duration { return 0 }},
		func(ctx context.Context, j *bus.Job) error {
			runs.Add(1)
			if err := h(ctx, j); err != nil {
				return err
			}
			if j.Token == 1 && j.Payload[len(j.Payload)-1]%3 == 0 {
				crashed.Add(1)
				return errCrash
			}
			done.Add(1)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(cctx) }()
	await.Count(t, "every job done", done.Load, n)
	stop()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("consumer: %v", err)
	}
	rows, ids := w.effects(t, ctx)
	if done.Load() != n || rows != n || ids != n || crashed.Load() == 0 {
		t.Fatalf("completed %d, effects %d rows for %d ids, redelivered %d (runs %d); want %d, %d, %d, >0",
			done.Load(), rows, ids, crashed.Load(), runs.Load(), n, n, n)
	}
}
