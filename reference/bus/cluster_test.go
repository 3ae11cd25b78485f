package bus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

func openCluster(t testing.TB, vc *engines.ValkeyCluster) *bus.Bus {
	t.Helper()
	b, err := bus.OpenCluster(ctxT(t), vc.Addrs[:1], bus.Options{})
	if err != nil {
		t.Fatalf("open cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// queuesOnEvery names one fresh queue per primary of r's map, so a test touches every node.
func queuesOnEvery(t testing.TB, r *cluster.Router) []string {
	t.Helper()
	var out []string
	base := qname(t)
	for _, p := range r.Primaries() {
		for i := 0; ; i++ {
			q := fmt.Sprintf("%s-%d", base, i)
			if r.Owner(cluster.SlotOfQueue(q)) == p && !slices.Contains(out, q) {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// onlyAtOwners scans every primary: every key parses under the grammar and lives on the node
// that owns its slot (nothing was written where a redirect should have sent it).
func onlyAtOwners(t *testing.T, vc *engines.ValkeyCluster, r *cluster.Router) int {
	t.Helper()
	n := 0
	for _, addr := range r.Primaries() {
		in := inspect(t, addr)
		for _, k := range in.scan("*") {
			n++
			if _, err := keys.Parse(k); err != nil {
				t.Errorf("%s holds %q outside the grammar: %v", addr, k, err)
			}
			if own := r.Owner(keys.Slot(k)); own != addr {
				t.Errorf("%s holds %q, whose slot %d is owned by %s", addr, k, keys.Slot(k), own)
			}
		}
	}
	return n
}

// Every op of the bus, on queues spread over the three primaries of a real cluster: each call
// goes to its queue's owner (no MOVED), and every key lands there.
func TestClusterBusOps(t *testing.T) {
	vc := enginestest.ValkeyCluster(t, 3)
	b := openCluster(t, vc)
	ctx := ctxT(t)
	r := b.Router()
	if r == nil || len(r.Primaries()) != 3 {
		t.Fatalf("router %v: want 3 primaries", r)
	}
	if got := b.Server(); got.Mode != "cluster" || got.Version == "" {
		t.Errorf("server %+v: want a cluster node's HELLO", got)
	}
	for _, q := range queuesOnEvery(t, r) {
		// enqueue, claim, complete
		e, err := b.Enqueue(ctx, q, []byte("one"))
		if err != nil || !e.Created {
			t.Fatalf("%s: enqueue %+v %v", q, e, err)
		}
		j, err := b.Claim(ctx, q, bus.Ms(30*time.Second))
		if err != nil || j == nil || j.ID != e.ID {
			t.Fatalf("%s: claim %+v %v", q, j, err)
		}
		if err := b.Complete(ctx, q, j.ID, j.Token+1); !errors.Is(err, emqerr.Stale) {
			t.Errorf("%s: complete with a stale token: %v, want EMQSTALE", q, err)
		}
		if err := b.Complete(ctx, q, j.ID, j.Token); err != nil {
			t.Fatalf("%s: complete: %v", q, err)
		}
		// a batch (one pipeline to the owner), a lane job, a failure, the morgue, revive
		msgs := []bus.Message{{Payload: []byte("a")}, {Payload: []byte("b")}, {Payload: []byte("g"), Lane: "g1"}}
		out, err := b.EnqueueBatch(ctx, q, msgs)
		if err != nil || len(out) != 3 || !out[0].Created || !out[2].Created {
			t.Fatalf("%s: enqueue batch %+v %v", q, out, err)
		}
		js, err := b.ClaimBatch(ctx, q, bus.Ms(30*time.Second), 10)
		if err != nil || len(js) != 2 {
			t.Fatalf("%s: claim batch %d %v", q, len(js), err)
		}
		if err := b.Fail(ctx, q, js[0].ID, js[0].Token, "boom"); err != nil {
			t.Fatal(err)
		}
		if dead, err := b.Retry(ctx, q, js[1].ID, js[1].Token, 10, 0, "again"); err != nil || dead {
			t.Fatal(err)
		}
		lj, err := b.LaneClaim(ctx, q, bus.Ms(30*time.Second))
		if err != nil || lj == nil || lj.Lane != "g1" {
			t.Fatalf("%s: lane claim %+v %v", q, lj, err)
		}
		if err := b.Complete(ctx, q, lj.ID, lj.Token); err != nil {
			t.Fatal(err)
		}
		dead, err := b.Morgue(ctx, q, 10)
		if err != nil || len(dead) != 1 || dead[0].Error != "boom" || string(dead[0].Payload) != "a" {
			t.Fatalf("%s: morgue %+v %v", q, dead, err)
		}
		if ok, err := b.Revive(ctx, q, dead[0].ID); err != nil || !ok {
			t.Fatalf("%s: revive %v %v", q, ok, err)
		}
		if err := b.Pause(ctx, q); err != nil {
			t.Fatal(err)
		}
		if j, err := b.Claim(ctx, q, bus.Ms(time.Second)); err != nil || j != nil {
			t.Fatalf("%s: claim from a paused queue %+v %v", q, j, err)
		}
		if err := b.Resume(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Promote(ctx, q, 100); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reap(ctx, q, 10, 100); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Moved+st.Ask+st.TryAgain != 0 {
		t.Errorf("redirects on a stable cluster: %+v", st)
	}
	if n := onlyAtOwners(t, vc, r); n == 0 {
		t.Error("no key written")
	}
}

// The bus refuses the wrong mode either way: Open on a cluster node, OpenCluster on a
// standalone server, each EMQSERVER before a script runs.
func TestClusterModeIsDeclared(t *testing.T) {
	vc := enginestest.ValkeyCluster(t, 1)
	if _, err := bus.Open(ctxT(t), vc.Addrs[0], bus.Options{}); !errors.Is(err, emqerr.Server) {
		t.Errorf("Open on a cluster node: %v, want EMQSERVER", err)
	}
	// A lone primary has never met a peer, so CLUSTER SHARDS leaves its ip empty: the map must
	// still name it by a dialable address.
	if p := openCluster(t, vc).Router().Primaries(); len(p) != 1 || p[0] != vc.Addrs[0] {
		t.Errorf("primaries %v, want [%s]", p, vc.Addrs[0])
	}
	v := enginestest.Valkey(t)
	if _, err := bus.OpenCluster(ctxT(t), []string{v.Addr}, bus.Options{}); !errors.Is(err, emqerr.Server) {
		t.Errorf("OpenCluster on a standalone server: %v, want EMQSERVER", err)
	}
	if _, err := bus.OpenCluster(ctxT(t), vc.Addrs, bus.Options{Tap: io.Discard}); !errors.Is(err, emqerr.Arg) {
		t.Errorf("OpenCluster with a Tap: %v, want EMQARG", err)
	}
}

// Consumers on queues of every primary drain their backlogs, each job handled once, parked on
// their queue's owner between jobs.
func TestClusterConsumersDrain(t *testing.T) {
	vc := enginestest.ValkeyCluster(t, 3)
	b := openCluster(t, vc)
	ctx := ctxT(t)
	var mu sync.Mutex
	seen := map[string]int{}
	const perQueue = 200
	var stops []func()
	qs := queuesOnEvery(t, b.Router())
	for _, q := range qs {
		c, err := b.Consumer(q, bus.ConsumerOptions{Concurrency: 4, Park: 100 * time.Millisecond},
			func(_ context.Context, j *bus.Job) error {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, runConsumer(t, c))
	}
	// The workers park first (four on each primary): the enqueues must wake them.
	for _, addr := range b.Router().Primaries() {
		in := inspect(t, addr)
		await.Until(t, "four workers parked on "+addr, func() bool { return blocked(in) == 4 })
	}
	for _, q := range qs {
		msgs := make([]bus.Message, perQueue)
		for i := range msgs {
			msgs[i].Payload = []byte("x")
		}
		if _, err := b.EnqueueBatch(ctx, q, msgs); err != nil {
			t.Fatal(err)
		}
	}
	await.Count(t, "every job handled", func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(seen))
	}, int64(perQueue*len(qs)))
	for _, s := range stops {
		s()
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s handled %d times", id, n)
		}
	}
	onlyAtOwners(t, vc, b.Router())
}

// The drill with the bus itself: a consumer drains a queue, and a producer feeds it (some jobs
// delayed, so promote runs too), while the queue's slot moves to another primary key by key.
// Nothing is lost or run twice; the bus followed the redirects and parks at the new owner. The
// drill is paced by the load, never by the clock (see TestSlotMigrationUnderLoad).
func TestClusterConsumerThroughSlotMove(t *testing.T) {
	vc := enginestest.ValkeyCluster(t, 3)
	if vc.Mode == engines.ModeGiven {
		t.Skip("moves a slot between primaries: only on a cluster of our own")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := openCluster(t, vc)
	r := b.Router()
	shards, err := engines.ClusterShards(ctx, vc.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	src, dst := shards[0], shards[1]
	q := ""
	for _, c := range queuesOnEvery(t, r) {
		if r.Owner(cluster.SlotOfQueue(c)) == src.Primary {
			q = c
		}
	}
	slot := cluster.SlotOfQueue(q)

	var mu sync.Mutex
	handled := map[string]int{}
	var nHandled, nEnq atomic.Int64
	c, err := b.Consumer(q, bus.ConsumerOptions{Concurrency: 4, Park: 100 * time.Millisecond,
		Maintain: 20 * time.Millisecond},
		func(_ context.Context, j *bus.Job) error {
			mu.Lock()
			handled[j.ID]++
			mu.Unlock()
			nHandled.Add(1)
			time.Sleep(time.Millisecond) // slower than the producer: a backlog stays for the move
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var enqueued []string
	for range 300 { // a backlog, so the move takes many batches
		e, err := b.Enqueue(ctx, q, []byte("p"))
		if err != nil {
			t.Fatal(err)
		}
		enqueued = append(enqueued, e.ID)
	}
	stopConsumer := runConsumer(t, c)
	stop := make(chan struct{})
	var producing sync.WaitGroup
	var prodErr atomic.Pointer[error]
	producing.Add(1)
	go func() {
		defer producing.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var opts []bus.EnqueueOption
			if i%5 == 0 {
				opts = append(opts, bus.WithDelay(30*time.Millisecond))
			}
			e, err := b.Enqueue(ctx, q, []byte("p"), opts...)
			if err != nil {
				prodErr.Store(&err)
				return
			}
			mu.Lock()
			enqueued = append(enqueued, e.ID)
			mu.Unlock()
			nEnq.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	// underLoad waits until the producer has enqueued and the consumer handled n more jobs.
	underLoad := func(what string, n int64) {
		t.Helper()
		e, h := nEnq.Load()+n, nHandled.Load()+n
		await.Until(t, what, func() bool { return prodErr.Load() != nil || (nEnq.Load() >= e && nHandled.Load() >= h) })
	}
	underLoad("the load before the move", 20)
	moved, err := engines.MoveSlot(ctx, shards, src, dst, int(slot), 25, func(context.Context) error {
		met := r.Stats().Ask + r.Stats().TryAgain // the load meets every half-moved state
		await.Until(t, "the load to meet the half-moved slot", func() bool {
			st := r.Stats()
			return prodErr.Load() != nil || st.Ask+st.TryAgain > met
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	underLoad("the load after the move", 20)
	close(stop)
	producing.Wait()
	if p := prodErr.Load(); p != nil {
		t.Fatalf("producer: %v", *p)
	}
	mu.Lock()
	want := len(enqueued)
	mu.Unlock()
	await.Count(t, "every job handled after the move", func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(handled))
	}, int64(want))
	// The workers park at the new owner now, all four: a job enqueued to an idle queue wakes one.
	in := inspect(t, dst.Primary)
	await.Until(t, "the four workers parked at the new owner", func() bool { return blocked(in) == 4 })
	late, err := b.Enqueue(ctx, q, []byte("late"))
	if err != nil {
		t.Fatal(err)
	}
	await.Until(t, "a job enqueued after the move", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled[late.ID] == 1
	})
	stopConsumer()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range enqueued {
		if handled[id] != 1 {
			t.Errorf("job %s handled %d times", id, handled[id])
		}
	}
	st := r.Stats()
	t.Logf("queue %s slot %d moved %s -> %s: %d keys; %d jobs; router %+v", q, slot, src.Primary, dst.Primary, moved, len(enqueued), st)
	if st.Moved == 0 || st.Ask+st.TryAgain == 0 {
		t.Errorf("router %+v: the move did not meet the load", st)
	}
	if r.Owner(slot) != dst.Primary {
		t.Errorf("slot %d on %s in the map, want %s", slot, r.Owner(slot), dst.Primary)
	}
	if moved < 100 {
		t.Errorf("only %d keys moved", moved)
	}
	onlyAtOwners(t, vc, r)
}
