package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// The co-location law on a real cluster: one queue per primary; every script of the bundle,
// called with exactly its header's KEYS, is single-slot (no CROSSSLOT), is answered by the
// primary that owns the queue's slot (no redirect), and whole job lifecycles work on each.
func TestColocationLaw(t *testing.T) {
	vc := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shards, err := engines.ClusterShards(ctx, vc.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 3 {
		t.Fatalf("%d primaries", len(shards))
	}
	rec := &calls{}
	r := dialRouter(t, vc.Addrs, rec)
	sc := newScripts(r.Bundle())
	owner := func(slot uint16) string {
		for _, s := range shards {
			for _, rg := range s.Slots {
				if int(slot) >= rg[0] && int(slot) <= rg[1] {
					return s.Primary
				}
			}
		}
		return ""
	}

	// The fence's key is on one node; the router ran it at every node's connect. Once more:
	if v, err := sc.run(ctx, r, lua.Fence, "", "", "", nil, lua.Version, r.Bundle().Digest()); err != nil || v.Text() != "ok" {
		t.Fatalf("fence through the router: %q %v", v.Text(), err)
	}
	// A deployment key ({emq}:minter:<w>) goes to the {emq} slot's owner.
	mk, _ := keys.Minter(3)
	if _, err := r.Do(ctx, mk, "SET", mk, "owner-x", "PX", 5000, "NX"); err != nil {
		t.Fatalf("minter lease: %v", err)
	}

	var queues []string
	for i, s := range shards {
		q := queueOn("law-", s.Slots[0][0], s.Slots[0][1])
		queues = append(queues, q)
		if got := owner(keys.Slot("emq:{" + q + "}:pending")); got != shards[i].Primary {
			t.Fatalf("queue %s lands on %s, want %s", q, got, shards[i].Primary)
		}
		lifecycle(t, ctx, r, sc, q)
	}

	// Every call was answered by the owner of its slot, with no redirect; every script ran.
	ran := map[string]bool{}
	for _, c := range rec.snapshot() {
		if c.Addr != owner(c.Slot) || c.Asking {
			t.Errorf("%s on slot %d answered by %s (asking %v), owner %s", c.Name, c.Slot, c.Addr, c.Asking, owner(c.Slot))
		}
		var se *resp.ServerError
		if errors.As(c.Err, &se) && (se.Kind == "CROSSSLOT" || se.Kind == "MOVED" || se.Kind == "ASK") {
			t.Errorf("%s on slot %d: %v", c.Name, c.Slot, c.Err)
		}
		ran[c.Name] = true
	}
	for _, s := range r.Bundle().Scripts() {
		if !ran[s.Name] {
			t.Errorf("script %s never ran on the cluster", s.Name)
		}
	}
	if st := r.Stats(); st.Moved != 0 || st.Ask != 0 || st.TryAgain != 0 {
		t.Errorf("redirects on a stable cluster: %+v", st)
	}
	// Each queue's keys live on its owner only; the deployment keys on the {emq} owner only.
	for _, q := range queues {
		slotHere(t, ctx, vc.Addrs, keys.Slot("emq:{"+q+"}:pending"), owner)
	}
	slotHere(t, ctx, vc.Addrs, keys.Slot(keys.Bundle()), owner)

	// A call whose keys span queues is refused before a byte is sent.
	_, err = r.EvalSha(ctx, sc.cs[lua.Pause], []string{"emq:{" + queues[0] + "}:meta", "emq:{" + queues[1] + "}:meta"})
	if !errors.Is(err, cluster.ErrCrossSlot) {
		t.Errorf("cross-queue call: %v, want ErrCrossSlot", err)
	}
}

// slotHere: the slot holds keys on its owner and none anywhere else.
func slotHere(t *testing.T, ctx context.Context, addrs []string, slot uint16, owner func(uint16) string) {
	t.Helper()
	for _, addr := range addrs {
		c, err := connector.Dial(ctx, addr, connector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", int(slot))
		c.Close()
		n, _ := v.Int64()
		if err != nil || (addr == owner(slot)) != (n > 0) {
			t.Errorf("slot %d on %s: %d keys (%v); owner %s", slot, addr, n, err, owner(slot))
		}
	}
}

// lifecycle runs every script of the bundle on queue q, as whole job lifecycles.
func lifecycle(t *testing.T, ctx context.Context, r *cluster.Router, sc scripts, q string) {
	t.Helper()
	do := func(name, id, lane string, batch []string, args ...any) resp.Value {
		t.Helper()
		v, err := sc.run(ctx, r, name, q, id, lane, batch, args...)
		if err != nil {
			t.Fatalf("queue %s: %s: %v", q, name, err)
		}
		return v
	}
	claim := func(want string, wantToken int64) int64 {
		t.Helper()
		v := do(lua.Claim, "", "", nil, 5000)
		if len(v.Elems) < 3 || v.Elems[0].Text() != want {
			t.Fatalf("queue %s: claim gave %v, want %s", q, v.Elems, want)
		}
		tok, _ := v.Elems[2].Int64()
		if tok != wantToken {
			t.Fatalf("queue %s: claim of %s gave token %d, want %d", q, want, tok, wantToken)
		}
		return tok
	}
	// enqueue -> claim -> extend -> checkpoint -> complete
	a := newID()
	do(lua.Enqueue, a, "", nil, a, "pa", 0)
	claim(a, 1)
	do(lua.Extend, a, "", nil, a, 1, 5000)
	do(lua.Checkpoint, a, "", nil, a, 1, "ck")
	do(lua.Complete, a, "", nil, a, 1)

	// retry (delayed) -> promote -> claim -> fail -> revive -> claim -> complete
	b := newID()
	do(lua.Enqueue, b, "", nil, b, "pb", 0)
	claim(b, 1)
	if v := do(lua.Retry, b, "", nil, b, 1, 5, 1, "e1"); v.Text() != "retried" {
		t.Fatalf("retry: %q", v.Text())
	}
	time.Sleep(5 * time.Millisecond)
	if v := do(lua.Promote, "", "", nil, 10); v.Int != 1 {
		t.Fatalf("promote moved %d", v.Int)
	}
	claim(b, 2)
	do(lua.Fail, b, "", nil, b, 2, "boom")
	if v := do(lua.Revive, b, "", nil, b); v.Int != 1 {
		t.Fatalf("revive: %d", v.Int)
	}
	claim(b, 3)
	do(lua.Complete, b, "", nil, b, 3)

	// an expired lease is reaped back to pending; a dead job is purged
	c := newID()
	do(lua.Enqueue, c, "", nil, c, "pc", 0)
	if v := do(lua.Claim, "", "", nil, 1); len(v.Elems) == 0 {
		t.Fatal("claim for reap: empty")
	}
	time.Sleep(5 * time.Millisecond)
	if v := do(lua.Reap, "", "", nil, 5, 10); v.Int != 1 {
		t.Fatalf("reap settled %d", v.Int)
	}
	claim(c, 2)
	do(lua.Fail, c, "", nil, c, 2, "gone")
	if v := do(lua.Purge, c, "", nil, c); v.Int != 1 {
		t.Fatalf("purge: %d", v.Int)
	}

	// pause / resume
	do(lua.Pause, "", "", nil)
	d := newID()
	do(lua.Enqueue, d, "", nil, d, "pd", 0)
	if v := do(lua.Claim, "", "", nil, 5000); len(v.Elems) != 0 {
		t.Fatalf("claim on a paused queue gave %v", v.Elems)
	}
	do(lua.Resume, "", "", nil)
	claim(d, 1)
	do(lua.Complete, d, "", nil, d, 1)

	// lanes: enqueue, ceiling, pause, resume, claim, complete
	e := newID()
	do(lua.LaneEnqueue, e, "ga", nil, e, "ga", "pe", 0)
	do(lua.LaneCeiling, "", "ga", nil, "ga", 1)
	do(lua.LanePause, "", "ga", nil, "ga")
	if v := do(lua.LaneClaim, "", "", nil, 5000); len(v.Elems) != 0 {
		t.Fatalf("lane_claim of a paused lane gave %v", v.Elems)
	}
	do(lua.LaneResume, "", "ga", nil, "ga")
	v := do(lua.LaneClaim, "", "", nil, 5000)
	if len(v.Elems) < 5 || v.Elems[0].Text() != e || v.Elems[4].Text() != "ga" {
		t.Fatalf("lane_claim gave %v, want %s in lane ga", v.Elems, e)
	}
	do(lua.Complete, e, "", nil, e, 1)

	// batches: enqueue_batch -> claim_batch -> complete_batch
	f, g := newID(), newID()
	do(lua.EnqueueBatch, "", "", []string{f, g}, f, "pf", 0, g, "pg", 0)
	v = do(lua.ClaimBatch, "", "", nil, 5000, 2)
	if len(v.Elems) != 2 || v.Elems[0].Elems[0].Text() != f || v.Elems[1].Elems[0].Text() != g {
		t.Fatalf("claim_batch gave %v", v.Elems)
	}
	v = do(lua.CompleteBatch, "", "", []string{f, g}, f, 1, g, 1)
	for i, s := range v.Elems {
		if s.Int != 1 {
			t.Fatalf("complete_batch item %d: %v", i, s)
		}
	}
	// nothing left behind: pending, active, scheduled, dead all empty
	for _, k := range []string{"pending", "active", "scheduled", "dead"} {
		key := "emq:{" + q + "}:" + k
		v, err := r.Do(ctx, key, "EXISTS", key)
		if err != nil || v.Int != 0 {
			t.Errorf("queue %s: %s left (%v %v)", q, key, v.Int, err)
		}
	}
	// a stale token is still EMQSTALE through the router
	if _, err := sc.run(ctx, r, lua.Complete, q, f, "", nil, f, 1); !errors.Is(err, emqerr.Stale) {
		t.Errorf("queue %s: complete of a finished job: %v, want EMQSTALE", q, err)
	}
}
