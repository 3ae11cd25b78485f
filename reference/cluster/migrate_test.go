package cluster_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
)

// The slot-migration drill: a producer enqueues and a consumer claims and completes on one queue
// through the router while the queue's slot moves to another primary (SETSLOT IMPORTING and
// MIGRATING, MIGRATE of its keys in batches, SETSLOT NODE on every node). Nothing is lost: every
// enqueued id is completed exactly once; the router followed the redirects. The drill is paced by
// the load, not by the clock: the move starts once the load runs, each batch waits until the
// router has met the half-moved slot (an ASK or a TRYAGAIN), and the load goes on after the move
// until jobs were enqueued and completed at the new owner.
func TestSlotMigrationUnderLoad(t *testing.T) {
	vc := startCluster(t)
	if vc.Mode == engines.ModeGiven {
		t.Skip("moves a slot between primaries: only on a cluster of our own")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shards, err := engines.ClusterShards(ctx, vc.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	src, dst := shards[0], shards[1]
	q := queueOn("move-", src.Slots[0][0], src.Slots[0][1])
	slot := cluster.SlotOfQueue(q)
	rec := &calls{}
	r := dialRouter(t, vc.Addrs, rec)
	sc := newScripts(r.Bundle())
	if r.Owner(slot) != src.Primary {
		t.Fatalf("queue %s (slot %d) on %s, want %s", q, slot, r.Owner(slot), src.Primary)
	}

	var (
		mu        sync.Mutex
		enqueued  []string
		completed = map[string]int{}
		errs      []error
		stop      = make(chan struct{})
		producing sync.WaitGroup
		consuming sync.WaitGroup
		// progress of the load: enqueues and completes so far, and whether a goroutine stopped
		nEnq, nDone atomic.Int64
		broken      atomic.Bool
	)
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock(); broken.Store(true) }
	// A backlog, so the slot holds a few hundred keys and the move takes many batches.
	for range 300 {
		id := newID()
		if _, err := sc.run(ctx, r, lua.Enqueue, q, id, "", nil, id, "p", 0); err != nil {
			t.Fatal(err)
		}
		enqueued = append(enqueued, id)
	}
	nEnq.Store(int64(len(enqueued)))
	producing.Add(1)
	go func() { // producer
		defer producing.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := newID()
			if _, err := sc.run(ctx, r, lua.Enqueue, q, id, "", nil, id, "p", 0); err != nil {
				fail(err)
				return
			}
			mu.Lock()
			enqueued = append(enqueued, id)
			mu.Unlock()
			nEnq.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	drained := make(chan struct{})
	consuming.Add(1)
	go func() { // consumer: claim and complete until told the producer stopped and pending is empty
		defer consuming.Done()
		for {
			v, err := sc.run(ctx, r, lua.Claim, q, "", "", nil, 30000)
			if err != nil {
				fail(err)
				return
			}
			if len(v.Elems) == 0 {
				select {
				case <-drained:
					return
				case <-time.After(time.Millisecond):
				}
				continue
			}
			id := v.Elems[0].Text()
			tok, _ := v.Elems[2].Int64()
			if _, err := sc.run(ctx, r, lua.Complete, q, id, "", nil, id, tok); err != nil {
				fail(err)
				return
			}
			mu.Lock()
			completed[id]++
			mu.Unlock()
			nDone.Add(1)
			time.Sleep(time.Millisecond) // slower than the producer: the backlog stays for the move
		}
	}()

	// underLoad waits until the producer and the consumer have each moved n more jobs.
	underLoad := func(what string, n int64) {
		t.Helper()
		e, d := nEnq.Load()+n, nDone.Load()+n
		await.Until(t, what, func() bool { return broken.Load() || (nEnq.Load() >= e && nDone.Load() >= d) })
	}
	underLoad("the load before the move", 20)
	enqBefore := nEnq.Load()
	moved := migrate(t, ctx, shards, src, dst, slot, func(ctx context.Context) error {
		// The load meets the half-moved slot between every two batches: an enqueue's new job key
		// is never on the source, so the router sees an ASK or a TRYAGAIN.
		met := r.Stats().Ask + r.Stats().TryAgain
		await.Until(t, "the load to meet the half-moved slot", func() bool {
			st := r.Stats()
			return broken.Load() || st.Ask+st.TryAgain > met
		})
		return ctx.Err()
	})
	enqDuring := nEnq.Load() - enqBefore
	underLoad("the load after the move", 20)
	close(stop)
	producing.Wait()
	close(drained)
	consuming.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Errorf("load: %v", err)
	}
	for _, id := range enqueued {
		if completed[id] != 1 {
			t.Errorf("job %s completed %d times", id, completed[id])
		}
	}
	if len(completed) != len(enqueued) {
		t.Errorf("%d completed, %d enqueued", len(completed), len(enqueued))
	}
	st := r.Stats()
	asked := 0
	for _, c := range rec.snapshot() {
		if c.Asking && c.Err == nil {
			asked++
		}
	}
	t.Logf("queue %s slot %d moved %s -> %s: %d keys migrated; %d jobs enqueued and completed (%d during the move); router %+v; %d calls answered after ASKING",
		q, slot, src.Primary, dst.Primary, moved, len(enqueued), enqDuring, st, asked)
	if r.Owner(slot) != dst.Primary {
		t.Errorf("router map: slot %d on %s, want %s", slot, r.Owner(slot), dst.Primary)
	}
	if st.Moved == 0 {
		t.Error("the router never followed a MOVED")
	}
	if st.Ask+st.TryAgain == 0 {
		t.Error("the router met no ASK or TRYAGAIN during the migration: the drill did not overlap the load")
	}
	if moved < 100 {
		t.Errorf("only %d keys moved", moved)
	}
	// The queue's keys now live on dst alone (the load left its bookkeeping keys).
	slotHere(t, ctx, vc.Addrs, slot, func(uint16) string { return dst.Primary })
}

// migrate moves slot from src to dst in batches of 25 keys, between run after each, and returns
// the number of keys moved.
func migrate(t *testing.T, ctx context.Context, shards []engines.Shard, src, dst engines.Shard, slot uint16, between func(context.Context) error) int {
	t.Helper()
	moved, err := engines.MoveSlot(ctx, shards, src, dst, int(slot), 25, between)
	if err != nil {
		t.Fatal(err)
	}
	return moved
}
