package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
)

// TestWorstCaseAtDefaults measures the bus with its default options (lease 30 s, park 5 s,
// health checks 2 s / 4 s) when every connection freezes while the consumer sits idle and
// parked: the worst case, since no call's deadline makes a socket suspect. The main connection
// must be replaced by the watcher within 1¼ HealthInterval + HealthTimeout, an Enqueue caller
// with a long deadline must get ErrConnLost (retriable) by then, and the parked workers must
// take the retried job at once (the replacement cuts their frozen pops short). Long drills only.
func TestWorstCaseAtDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the default timings (about 10 s); make faults runs it")
	}
	v := enginestest.Valkey(t)
	px, err := newProxy(v.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := bus.Open(ctx, px.addr(), bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	handled := make(chan time.Time, 1)
	c, err := b.Consumer("worst", bus.ConsumerOptions{Concurrency: 2}, func(context.Context, *bus.Job) error {
		handled <- time.Now()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	defer func() { stop(); <-done }()
	time.Sleep(time.Second) // both workers parked on their lines
	px.hold()
	px.freeze()
	px.release()
	frozen := time.Now()
	var failed time.Duration
	for {
		ectx, ecancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := b.Enqueue(ectx, "worst", []byte("after the freeze"), bus.WithID("JOB0000000000W"))
		ecancel()
		if err == nil {
			break
		}
		if !errors.Is(err, connector.ErrConnLost) {
			t.Fatalf("enqueue on a frozen connection: %v, want ErrConnLost (retriable)", err)
		}
		if failed == 0 {
			failed = time.Since(frozen)
		}
		time.Sleep(10 * time.Millisecond)
	}
	replaced := time.Since(frozen)
	var took time.Duration
	select {
	case at := <-handled:
		took = at.Sub(frozen)
	case <-time.After(20 * time.Second):
		t.Fatal("the parked consumer never took the job enqueued after the freeze")
	}
	bound := connector.DefaultHealthTimeout + connector.DefaultHealthInterval*5/4 + time.Second // HealthTimeout + 1¼ HealthInterval + slack
	t.Logf("defaults, idle and parked, every connection frozen: the Enqueue caller got ErrConnLost after %v; enqueued on the new connection after %v; the parked consumer took the job %v after the freeze; reconnects %d",
		failed.Round(10*time.Millisecond), replaced.Round(10*time.Millisecond), took.Round(10*time.Millisecond), c.Health().Reconnects)
	if failed == 0 || failed > bound || took > bound+time.Second || c.Health().Reconnects < 1 {
		t.Fatalf("over the worst-case bound %v (or no reconnect counted)", bound)
	}
}
