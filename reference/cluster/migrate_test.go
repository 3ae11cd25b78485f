package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
)

// The slot-migration drill: a producer enqueues and a consumer claims and completes on one queue
// through the router while the queue's slot moves to another primary (SETSLOT IMPORTING and
// MIGRATING, MIGRATE of its keys in batches, SETSLOT NODE on every node). Nothing is lost: every
// enqueued id is completed exactly once; the router followed the redirects.
func TestSlotMigrationUnderLoad(t *testing.T) {
	vc := startCluster(t)
	if vc.Mode == engines.ModeGiven {
		t.Skip("moves a slot between primaries: only on a cluster of our own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	)
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	// A backlog, so the slot holds a few hundred keys and the move takes many batches.
	for range 300 {
		id := newID()
		if _, err := sc.run(ctx, r, lua.Enqueue, q, id, "", nil, id, "p", 0); err != nil {
			t.Fatal(err)
		}
		enqueued = append(enqueued, id)
	}
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
			time.Sleep(time.Millisecond) // slower than the producer: the backlog stays for the move
		}
	}()

	time.Sleep(50 * time.Millisecond) // load before the move
	moved := migrate(t, ctx, vc.Addrs, shards, src, dst, slot)
	time.Sleep(150 * time.Millisecond) // load after the move
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
	t.Logf("queue %s slot %d moved %s -> %s: %d keys migrated; %d jobs enqueued and completed; router %+v; %d calls answered after ASKING",
		q, slot, src.Primary, dst.Primary, moved, len(enqueued), st, asked)
	if r.Owner(slot) != dst.Primary {
		t.Errorf("router map: slot %d on %s, want %s", slot, r.Owner(slot), dst.Primary)
	}
	if st.Moved == 0 {
		t.Error("the router never followed a MOVED")
	}
	if st.Ask+st.TryAgain == 0 {
		t.Error("the router met no ASK or TRYAGAIN during the migration: the drill did not overlap the load")
	}
	if len(enqueued) < 350 || moved < 100 {
		t.Errorf("only %d jobs under load, %d keys moved", len(enqueued), moved)
	}
	// The queue's keys now live on dst alone (the load left its bookkeeping keys).
	slotHere(t, ctx, vc.Addrs, slot, func(uint16) string { return dst.Primary })
}

// migrate moves slot from src to dst in batches of 25 keys, 5ms apart, and returns the number
// of keys moved.
func migrate(t *testing.T, ctx context.Context, _ []string, shards []engines.Shard, src, dst engines.Shard, slot uint16) int {
	t.Helper()
	moved, err := engines.MoveSlot(ctx, shards, src, dst, int(slot), 25, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return moved
}
