package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/outbox"
)

// world is a bus, a PostgreSQL pool, an outbox and a plain connection to read Valkey with.
type world struct {
	b    *bus.Bus
	pool *pgxpool.Pool
	o    *outbox.Outbox
	vk   *connector.Conn
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
	vc, err := connector.Dial(ctx, vk.Addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vc.Close() })
	pool, err := pgxpool.New(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := fmt.Sprintf("outbox_%d", time.Now().UnixNano())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".orders (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	o := outbox.New(b, outbox.Options{Table: schema + ".emq_outbox", Batch: 7})
	if err := o.Schema(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	return ctx, &world{b, pool, o, vc}
}

func (w *world) pending(t *testing.T, ctx context.Context, queue string) int {
	t.Helper()
	q, err := keys.Queue(queue)
	if err != nil {
		t.Fatal(err)
	}
	v, err := w.vk.Do(ctx, "ZCARD", q.Pending())
	if err != nil {
		t.Fatal(err)
	}
	return int(v.Int)
}

// A committed business transaction's jobs reach the bus, each once; a rolled-back one's never.
func TestCommittedRowsBecomeJobsOnce(t *testing.T) {
	ctx, w := setup(t)
	pool, o := w.pool, w.o
	var want []string
	for i := range 20 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id, err := o.Add(ctx, tx, "orders", []byte(fmt.Sprintf("order %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			tx.Rollback(ctx) // the business transaction failed: no job
			continue
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if empty, err := o.Empty(ctx, pool); err != nil || empty {
		t.Fatalf("Empty before the relay: %v %v, want false", empty, err)
	}
	total := 0
	for {
		n, err := o.Relay(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if empty, err := o.Empty(ctx, pool); err != nil || !empty {
		t.Fatalf("Empty after the relay: %v %v, want true", empty, err)
	}
	if total != len(want) || w.pending(t, ctx, "orders") != len(want) {
		t.Fatalf("relayed %d, pending %d; want %d", total, w.pending(t, ctx, "orders"), len(want))
	}
	for _, id := range want {
		q, _ := keys.Queue("orders")
		row, err := q.Job(id)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := w.vk.Do(ctx, "HGET", row, "state"); err != nil || string(v.Str) != "pending" {
			t.Errorf("job %s: %v %v", id, v, err)
		}
	}
}

// A relay that dies between the enqueue and its commit leaves the rows; the next relay sends them
// again and the idempotent enqueue keeps one job per row.
func TestRelayCrashAfterEnqueueLosesNothingAndDoublesNothing(t *testing.T) {
	ctx, w := setup(t)
	b, pool, o := w.b, w.pool, w.o
	tx, _ := pool.Begin(ctx)
	var ids []string
	for i := range 5 {
		id, err := o.Add(ctx, tx, "orders", []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The crash: enqueue happened (as a relay would), the delete never committed.
	msgs := make([]bus.Message, len(ids))
	for i, id := range ids {
		msgs[i] = bus.Message{ID: id, Payload: []byte{byte(i)}}
	}
	if _, err := b.EnqueueBatch(ctx, "orders", msgs); err != nil {
		t.Fatal(err)
	}
	n, err := o.Relay(ctx, pool)
	if err != nil || n != 5 {
		t.Fatalf("relay: %d %v", n, err)
	}
	if got := w.pending(t, ctx, "orders"); got != 5 {
		t.Fatalf("pending %d after the re-relay, want 5", got)
	}
}

// Run relays rows committed while it runs and stops with its context.
func TestRunFollowsCommits(t *testing.T) {
	ctx, w := setup(t)
	pool, o := w.pool, w.o
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(rctx, pool) }()
	for i := range 30 {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := o.Add(ctx, tx, "orders", []byte{byte(i)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	await.Count(t, "the 30 rows relayed", func() int64 { return int64(w.pending(t, ctx, "orders")) }, 30)
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	if got := w.pending(t, ctx, "orders"); got != 30 {
		t.Fatalf("pending %d, want 30", got)
	}
}
