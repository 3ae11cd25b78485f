package bus_test

import (
	"context"
	"errors"
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

func TestClaimCompleteBatch(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	if js, err := b.ClaimBatch(ctx, q, bus.Ms(time.Second), 10); err != nil || len(js) != 0 {
		t.Fatalf("claim batch of an empty queue = %v, %v", js, err)
	}
	var want []string
	for i := 0; i < 5; i++ {
		e, err := b.Enqueue(ctx, q, []byte{byte('a' + i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	before := in.now()
	js, err := b.ClaimBatch(ctx, q, bus.Ms(30*time.Second), 3)
	after := in.now()
	if err != nil || len(js) != 3 {
		t.Fatalf("claim batch = %v, %v", js, err)
	}
	for i, j := range js {
		if j.ID != want[i] || j.Token != 1 || string(j.Payload) != string(rune('a'+i)) || j.LastCheckpoint != nil || j.Queue != q {
			t.Fatalf("claim %d = %+v", i, j)
		}
		if d := in.score("emq:{"+q+"}:active", j.ID); d < before+30000 || d > after+30000 {
			t.Fatalf("deadline %d not in server [%d, %d] + 30s", d, before, after)
		}
	}
	// A batch's jobs settle one by one, as a single claim's do.
	if err := js[2].Complete(ctx); err != nil {
		t.Fatal(err)
	}
	rest, err := b.ClaimBatch(ctx, q, bus.Ms(30*time.Second), 10)
	if err != nil || len(rest) != 2 || rest[0].ID != want[3] {
		t.Fatalf("claim batch of the rest = %v, %v", rest, err)
	}
	acks := []bus.Ack{{js[0].ID, 1}, {js[1].ID, 2}, {js[2].ID, 1}, {rest[0].ID, 1}, {rest[1].ID, 1}, {js[0].ID, 1}}
	status, err := b.CompleteBatch(ctx, q, acks)
	if err != nil || len(status) != len(acks) {
		t.Fatalf("complete batch = %v, %v", status, err)
	}
	for i, stale := range []bool{false, true, true, false, false, true} {
		if stale != errors.Is(status[i], emqerr.Stale) || (!stale && status[i] != nil) {
			t.Fatalf("pair %d %+v: status %v", i, acks[i], status[i])
		}
	}
	// The stale pair changed nothing: its live token still settles.
	if err := b.Complete(ctx, q, js[1].ID, 1); err != nil {
		t.Fatalf("the live token after a stale pair: %v", err)
	}
	if left := in.residue(q); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	// Bad input is typed and sends nothing.
	for _, n := range []int{0, -1, bus.MaxBatch + 1} {
		if _, err := b.ClaimBatch(ctx, q, bus.Ms(time.Second), n); !errors.Is(err, emqerr.Arg) {
			t.Fatalf("claim batch n=%d: %v", n, err)
		}
	}
	if _, err := b.ClaimBatch(ctx, q, 0, 1); !errors.Is(err, emqerr.Arg) {
		t.Fatalf("claim batch of a zero lease: %v", err)
	}
	if _, err := b.CompleteBatch(ctx, q, []bus.Ack{{want[0], 1}, {"ORD" + want[0][3:], 1}}); !errors.Is(err, emqerr.Kind) {
		t.Fatalf("complete batch with another brand: %v", err)
	}
	if _, err := b.CompleteBatch(ctx, q, []bus.Ack{{want[0], 0}}); !errors.Is(err, emqerr.Arg) {
		t.Fatalf("complete batch with token 0: %v", err)
	}
	if _, err := b.ClaimBatch(ctx, "Bad Name", bus.Ms(time.Second), 1); !errors.Is(err, emqerr.Key) {
		t.Fatalf("claim batch of a bad queue: %v", err)
	}
}

// More than MaxBatch messages or acks go as several script calls; results stay in order.
func TestBatchesSplit(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	msgs := make([]bus.Message, bus.MaxBatch+5)
	msgs[7].Lane = "l1" // a lane message between the groups keeps its place
	out, err := b.EnqueueBatch(ctx, q, msgs)
	if err != nil || len(out) != len(msgs) {
		t.Fatalf("enqueue batch = %d, %v", len(out), err)
	}
	for i, e := range out {
		if !e.Created || (i > 0 && e.ID <= out[i-1].ID) {
			t.Fatalf("result %d = %+v", i, e)
		}
	}
	if in.int("ZCARD", "emq:{"+q+"}:pending") != int64(len(msgs)-1) || in.int("ZCARD", "emq:{"+q+"}:lane:l1") != 1 {
		t.Fatal("the batch did not land where it should")
	}
	again, err := b.EnqueueBatch(ctx, q, []bus.Message{{ID: out[3].ID}, {ID: out[7].ID, Lane: "l1"}})
	if err != nil || again[0].Created || again[1].Created {
		t.Fatalf("duplicates = %+v, %v", again, err)
	}
	var acks []bus.Ack
	for len(acks) < len(msgs)-1 {
		js, err := b.ClaimBatch(ctx, q, bus.Ms(30*time.Second), bus.MaxBatch)
		if err != nil || len(js) == 0 {
			t.Fatalf("claim batch = %d, %v", len(js), err)
		}
		for _, j := range js {
			acks = append(acks, bus.Ack{ID: j.ID, Token: j.Token})
		}
	}
	status, err := b.CompleteBatch(ctx, q, acks)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range status {
		if s != nil {
			t.Fatalf("pair %d: %v", i, s)
		}
	}
	lj, _ := b.LaneClaim(ctx, q, bus.Ms(time.Second))
	lj.Complete(ctx)
	if left := in.residue(q); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// BatchEnqueue: concurrent enqueues are coalesced into enqueue_batch calls (fewer script calls
// than jobs), every caller gets its own outcome, and a lone enqueue is one enqueue.
func TestBatchEnqueue(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{BatchEnqueue: true}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	mon, err := connector.NewMonitor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	dup, err := b.Enqueue(ctx, q, []byte("first"))
	if err != nil || !dup.Created {
		t.Fatalf("lone enqueue = %+v, %v", dup, err)
	}
	const producers, each = 16, 200
	var wg sync.WaitGroup
	var created, dups atomic.Int64
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				opts := []bus.EnqueueOption{}
				if i == 0 {
					opts = append(opts, bus.WithID(dup.ID))
				}
				e, err := b.Enqueue(ctx, q, []byte("x"), opts...)
				if err != nil {
					t.Error(err)
					return
				}
				if e.Created {
					created.Add(1)
				} else if e.ID == dup.ID {
					dups.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if created.Load() != producers*(each-1) || dups.Load() != producers {
		t.Fatalf("created %d, duplicates %d", created.Load(), dups.Load())
	}
	if n := in.int("ZCARD", "emq:{"+q+"}:pending"); n != 1+producers*(each-1) {
		t.Fatalf("pending %d", n)
	}
	if in.hash("emq:{" + q + "}:job:" + dup.ID)["payload"] != "first" {
		t.Fatal("a duplicate in a batch changed the row")
	}
	// Count the script calls the producers made: every one of them, read up to a sentinel sent
	// after the last (a time window would count what a busy machine had printed by then).
	in.do("ECHO", "enqueued-"+q)
	calls := 0
	for s := "enqueued-" + q; ; {
		line, err := mon.Next(ctx)
		if err != nil {
			t.Fatalf("monitor after %d script calls: %v", calls, err)
		}
		ml, err := connector.ParseMonitorLine(line)
		if err != nil {
			continue
		}
		if isSentinel(ml, s) {
			break
		}
		if ml.Args[0] == "EVALSHA" {
			calls++
		}
	}
	if calls == 0 || calls >= producers*each {
		t.Fatalf("%d script calls for %d enqueues: want some, and fewer", calls, producers*each)
	}
	// Drain by the consumer, whose claims and completes group too: fewer script calls than
	// one claim and one complete per job.
	mon2, err := connector.NewMonitor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon2.Close()
	var drainCalls atomic.Int64
	sentinel := "drained-" + q  // sent once the drain is over
	var met atomic.Bool         // the monitor read up to the sentinel
	tail := make(chan struct{}) // closed when the monitor goroutine ends
	go func() {
		defer close(tail)
		for {
			line, err := mon2.Next(ctx)
			if err != nil {
				return
			}
			ml, err := connector.ParseMonitorLine(line)
			switch {
			case err != nil:
			case isSentinel(ml, sentinel):
				met.Store(true)
				return
			case ml.Args[0] == "EVALSHA" && len(ml.Args) > 3 && strings.Contains(ml.Args[3], "{"+q+"}"):
				drainCalls.Add(1)
			}
		}
	}()
	var n atomic.Int64
	c, _ := b.Consumer(q, bus.ConsumerOptions{Concurrency: 16, Lease: bus.Ms(10 * time.Second), Maintain: -1, Park: 100 * time.Millisecond},
		func(ctx context.Context, j *bus.Job) error { n.Add(1); return nil })
	stop := runConsumer(t, c)
	await.Count(t, "the drain", n.Load, 1+producers*(each-1))
	stop()
	if left := in.residue(q); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	in.do("ECHO", sentinel) // the monitor's tail: every call run before it is read
	if <-tail; !met.Load() {
		t.Fatal("the monitor ended before the drain's last call")
	}
	if d := drainCalls.Load(); d == 0 || d >= 2*(producers*(each-1)+1) {
		t.Fatalf("%d script calls to drain %d jobs: want fewer than a claim and a complete each", d, n.Load())
	}
}

// A cancelled caller waiting for the batcher returns its context's error and its job is never
// sent; the group keeps working for the others.
func TestBatchEnqueueCancelled(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{BatchEnqueue: true}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	var wg sync.WaitGroup
	var ok, cancelled atomic.Int64
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				cctx, cancel := context.WithCancel(ctx)
				if i%3 == 0 {
					cancel()
				}
				_, err := b.Enqueue(cctx, q, nil)
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
				default:
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load()+cancelled.Load() != 800 || ok.Load() < 500 {
		t.Fatalf("ok %d cancelled %d", ok.Load(), cancelled.Load())
	}
	// A grouped call reports cancellation only when it left the queue before anything was sent,
	// so pending holds exactly the successes.
	if n := in.int("ZCARD", "emq:{"+q+"}:pending"); n != ok.Load() {
		t.Fatalf("pending %d, want exactly the %d successes", n, ok.Load())
	}
	if _, err := b.Enqueue(ctx, q, nil); err != nil {
		t.Fatalf("the batcher after cancellations: %v", err)
	}
	for {
		js, _ := b.ClaimBatch(ctx, q, bus.Ms(time.Second), bus.MaxBatch)
		if len(js) == 0 {
			break
		}
		var acks []bus.Ack
		for _, j := range js {
			acks = append(acks, bus.Ack{ID: j.ID, Token: j.Token})
		}
		b.CompleteBatch(ctx, q, acks)
	}
}
