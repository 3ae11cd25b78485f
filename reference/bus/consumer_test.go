package bus_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
)

// runConsumer starts c.Run in the background; stop cancels it and waits for Run to return.
func runConsumer(t *testing.T, c *bus.Consumer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(await.Stall): // beyond any grace period the tests give
				t.Fatal("consumer did not shut down")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor waits until cond holds: await.Until, named as the package's tests call it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	await.Until(t, what, cond)
}

func TestConsumerSettlesByOutcome(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	var msgs []bus.Message
	for i := 0; i < 60; i++ {
		p := "ok"
		switch i % 6 {
		case 1:
			p = "flaky" // fails on its first attempt
		case 2:
			p = "poison" // permanent failure
		case 3:
			p = "always" // fails every attempt: buried at MaxAttempts
		}
		msgs = append(msgs, bus.Message{Payload: []byte(p)})
	}
	var handled atomic.Int64
	var mu sync.Mutex
	attempts := map[string]int64{}
	c, err := b.Consumer(q, bus.ConsumerOptions{
		Concurrency: 4, Lease: bus.Ms(2 * time.Second), MaxAttempts: 3,
		Backoff: func(int) time.Duration { return 0 }, Park: 50 * time.Millisecond,
	}, func(ctx context.Context, j *bus.Job) error {
		defer handled.Add(1)
		mu.Lock()
		attempts[j.ID] = j.Token
		mu.Unlock()
		switch string(j.Payload) {
		case "flaky":
			if j.Token == 1 {
				return errors.New("flaky first time")
			}
		case "poison":
			return bus.Permanent(errors.New("poison"))
		case "always":
			return errors.New("always")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := runConsumer(t, c)
	if _, err := b.EnqueueBatch(ctx, q, msgs); err != nil {
		t.Fatal(err)
	}
	// 30 ok + 10 flaky×2 + 10 poison + 10 always×3 handler calls.
	await.Count(t, "all attempts", handled.Load, 30+20+10+30)
	waitFor(t, "settlement", func() bool { return in.int("ZCARD", "emq:{"+q+"}:dead") == 20 })
	stop()
	m, _ := b.Morgue(ctx, q, 100)
	var poison, always int
	for _, d := range m {
		switch d.Error {
		case "poison":
			poison++
			if d.Attempts != 1 {
				t.Errorf("poison job buried after %d attempts", d.Attempts)
			}
		case "always":
			always++
			if d.Attempts != 3 {
				t.Errorf("failing job buried after %d attempts", d.Attempts)
			}
		}
	}
	if poison != 10 || always != 10 {
		t.Fatalf("morgue: %d poison, %d always", poison, always)
	}
	for _, d := range m {
		b.Purge(ctx, q, d.ID)
	}
	if r := in.residue(q); len(r) != 0 {
		t.Fatalf("left: %v", r)
	}
}

// A handler that outlives its lease keeps the job: the heartbeat extends it at lease/3, even
// with the consumer's own reaper running every lease/2. The lease is a second: a heartbeat
// late by two thirds of it is no busy machine's pause (a 60 ms lease was: a 40 ms stall lost it).
func TestConsumerHeartbeat(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	result := make(chan error, 1)
	const lease = time.Second
	c, _ := b.Consumer(q, bus.ConsumerOptions{Lease: bus.Ms(lease), Park: 50 * time.Millisecond},
		func(ctx context.Context, j *bus.Job) error {
			first := in.score("emq:{"+q+"}:active", j.ID)
			in.waitServerPast(first + lease.Milliseconds()) // a whole lease past the first deadline
			if err := ctx.Err(); err != nil {
				result <- err
				return err
			}
			err := j.Complete(ctx)
			result <- err
			return err
		})
	runConsumer(t, c)
	b.Enqueue(ctx, q, nil)
	if err := <-result; err != nil {
		t.Fatalf("complete after a long handler: %v", err)
	}
	if r := in.residue(q); len(r) != 0 {
		t.Fatalf("left: %v", r)
	}
}

// A handler whose lease is lost (here: the job is completed behind its back) sees its context
// cancelled with ErrLeaseLost at the next heartbeat.
func TestConsumerLeaseLostCancelsHandler(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	cause := make(chan error, 1)
	c, _ := b.Consumer(q, bus.ConsumerOptions{Lease: bus.Ms(90 * time.Millisecond), Park: 50 * time.Millisecond, Maintain: -1},
		func(ctx context.Context, j *bus.Job) error {
			if err := b.Complete(ctx, q, j.ID, j.Token); err != nil { // someone else settles it
				t.Error(err)
			}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
	runConsumer(t, c)
	b.Enqueue(ctx, q, nil)
	select {
	case err := <-cause:
		if !errors.Is(err, bus.ErrLeaseLost) {
			t.Fatalf("cause %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler was never cancelled")
	}
}

// Idle consumers send nothing but BLPOP on the wake key; an enqueue wakes one promptly, and a
// burst wakes parked consumers one after another; the wake list never exceeds one.
func TestConsumerParksAndWakes(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	var got sync.Map
	var n atomic.Int64
	c, _ := b.Consumer(q, bus.ConsumerOptions{Concurrency: 3, Lease: bus.Ms(time.Second), Park: 100 * time.Millisecond, Maintain: -1},
		func(ctx context.Context, j *bus.Job) error {
			got.Store(j.ID, j.Worker)
			n.Add(1)
			time.Sleep(5 * time.Millisecond)
			return nil
		})
	runConsumer(t, c)
	waitFor(t, "three parked consumers", func() bool {
		return blocked(in) == 3
	})
	mon, err := connector.NewMonitor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	// Watch three park timeouts' worth of idleness: three pops again from each consumer, counted
	// as they come (a busy machine stretches the time, not the count), and nothing else.
	var blpops int
	for blpops < 3*3 {
		line, err := mon.Next(ctx)
		if err != nil {
			t.Fatalf("monitor after %d blocking pops: %v", blpops, err)
		}
		ml, err := connector.ParseMonitorLine(line)
		if err != nil || !strings.Contains(line, "{"+q+"}") {
			continue
		}
		if strings.ToUpper(ml.Args[0]) != "BLPOP" || ml.Args[1] != "emq:{"+q+"}:wake" {
			t.Fatalf("an idle consumer sent %v", ml.Args)
		}
		blpops++
	}

	// The enqueue wakes one: a pop that timed out parks again without claiming (the monitor
	// above saw nothing but pops), so a handled job is a woken consumer's, however long it took.
	// How long a wake takes is BenchmarkLatencyE2E's figure, not a bound of this test.
	e, _ := b.Enqueue(ctx, q, nil)
	waitFor(t, "the wake", func() bool { _, ok := got.Load(e.ID); return ok })
	waitFor(t, "re-park", func() bool { return blocked(in) == 3 })
	// A burst: every job handled, the wake never longer than one.
	var burst []bus.Message
	for i := 0; i < 30; i++ {
		burst = append(burst, bus.Message{})
	}
	b.EnqueueBatch(ctx, q, burst)
	workers := map[int]bool{}
	waitFor(t, "the burst", func() bool {
		if l := in.int("LLEN", "emq:{"+q+"}:wake"); l > 1 {
			t.Fatalf("wake list length %d", l)
		}
		return n.Load() == 31
	})
	got.Range(func(_, w any) bool { workers[w.(int)] = true; return true })
	if len(workers) < 2 {
		t.Fatalf("a burst of 30 woke only workers %v", workers)
	}
}

// blocked counts clients blocked on a command (the parked consumers).
func blocked(in *inspector) int {
	v := in.do("INFO", "clients")
	for _, line := range strings.Split(string(v.Str), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			var n int
			for _, ch := range rest {
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	return -1
}

// Graceful shutdown: no claims after the stop; a handler that finishes within the grace period
// settles its job; one that does not is cancelled and its job left to the reaper; Run returns
// with every goroutine it started gone.
func TestConsumerGracefulShutdown(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	runtime.GC()
	baseline := runtime.NumGoroutine()

	started := make(chan string, 2)
	release := make(chan struct{})
	// The grace period is a second: the quick handler's settlement after the stop must fit in it
	// on a busy machine; the stuck handler waits it out.
	c, _ := b.Consumer(q, bus.ConsumerOptions{Concurrency: 4, Lease: bus.Ms(5 * time.Second), Park: 200 * time.Millisecond, Grace: time.Second},
		func(ctx context.Context, j *bus.Job) error {
			started <- string(j.Payload)
			if string(j.Payload) == "quick" {
				<-release
				return nil
			}
			<-ctx.Done() // "stuck": only the end of the grace period stops it
			return ctx.Err()
		})
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	quick, _ := b.Enqueue(ctx, q, []byte("quick"))
	stuck, _ := b.Enqueue(ctx, q, []byte("stuck"))
	<-started
	<-started
	cancel()       // the grace period runs from here: Run's context has ended
	close(release) // the quick handler finishes inside the grace period
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(await.Stall): // Run returns at the grace period's end, however late the machine makes it
		t.Fatal("Run did not return")
	}
	if in.int("EXISTS", "emq:{"+q+"}:job:"+quick.ID) != 0 {
		t.Fatal("the job finished within the grace period was not completed")
	}
	if st := in.hash("emq:{" + q + "}:job:" + stuck.ID)["state"]; st != "active" {
		t.Fatalf("the cancelled job is %q, want active (left to the reaper)", st)
	}
	b.Enqueue(ctx, q, nil)
	time.Sleep(20 * time.Millisecond)
	if in.int("ZCARD", "emq:{"+q+"}:pending") != 1 {
		t.Fatal("a stopped consumer claimed")
	}
	waitFor(t, "goroutines back to baseline", func() bool {
		return runtime.NumGoroutine() <= baseline
	})
	// Clean up: the stuck job's lease is still live; hand it back and drain.
	j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
	j.Complete(ctx)
	in.do("ZADD", "emq:{"+q+"}:active", "XX", 0, stuck.ID)
	b.Reap(ctx, q, 10, 10)
	j, _ = b.Claim(ctx, q, bus.Ms(time.Second))
	j.Complete(ctx)
}

// With Parked below Concurrency, at most Parked idle workers block on the wake key; the others
// wait in-process and send nothing; a burst still reaches workers beyond the parked ones.
func TestConsumerParkedBound(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	if _, err := b.Consumer(q, bus.ConsumerOptions{Concurrency: 2, Parked: -1}, func(context.Context, *bus.Job) error { return nil }); !errors.Is(err, emqerr.Arg) {
		t.Fatalf("parked -1: %v", err)
	}
	var n atomic.Int64
	var workers sync.Map
	c, _ := b.Consumer(q, bus.ConsumerOptions{Concurrency: 8, Parked: 2, Lease: bus.Ms(time.Second), Park: 100 * time.Millisecond, Maintain: -1},
		func(ctx context.Context, j *bus.Job) error {
			workers.Store(j.Worker, true)
			n.Add(1)
			time.Sleep(5 * time.Millisecond)
			return nil
		})
	runConsumer(t, c)
	waitFor(t, "two parked workers", func() bool { return blocked(in) == 2 })
	mon, err := connector.NewMonitor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	idle, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	for {
		line, err := mon.Next(idle)
		if err != nil {
			break
		}
		ml, err := connector.ParseMonitorLine(line)
		if err != nil || !strings.Contains(line, "{"+q+"}") {
			continue
		}
		if strings.ToUpper(ml.Args[0]) != "BLPOP" || ml.Args[1] != "emq:{"+q+"}:wake" {
			t.Fatalf("an idle consumer sent %v", ml.Args)
		}
	}
	// A sample may fall between a pop's timeout and its re-issue: wait for both, never more.
	waitFor(t, "two blocked pops while idle", func() bool {
		got := blocked(in)
		if got > 2 {
			t.Fatalf("%d blocked pops while idle, want 2", got)
		}
		return got == 2
	})
	burst := make([]bus.Message, 40)
	if _, err := b.EnqueueBatch(ctx, q, burst); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the burst", func() bool {
		if got := blocked(in); got > 2 {
			t.Fatalf("%d blocked pops, more than Parked", got)
		}
		return n.Load() == 40
	})
	used := 0
	workers.Range(func(_, _ any) bool { used++; return true })
	if used <= 2 {
		t.Fatalf("a burst of 40 reached only %d workers", used)
	}
	waitFor(t, "re-park", func() bool { return blocked(in) == 2 })
}
