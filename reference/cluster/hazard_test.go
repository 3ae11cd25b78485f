package cluster_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
)

// A finding, pinned: the bundle's scripts derive job rows (emq:{q}:job:<id>) from the queue
// prefix instead of declaring them in KEYS. The cluster checks a call's declared KEYS only; while a
// slot migrates key by key (Valkey 8.1), a script whose declared keys are all still on the source
// runs there, and its first access to a row that has already moved aborts it with "non local
// key" — after its earlier writes. reap ZREMs the id from active, then reads the row: the job is
// orphaned (row on the target in state active, in no index). This test asserts that behaviour so a
// change to the bundle (declared rows, or reads before writes) or to the engine (atomic slot
// migration) shows up here; until then a resharding procedure must keep reap (and promote, which
// derives lane keys) off a migrating queue.
func TestMigrationDerivedKeyHazard(t *testing.T) {
	vc := startCluster(t)
	if vc.Mode == engines.ModeGiven {
		t.Skip("moves a slot between primaries: only on a cluster of our own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shards, _ := engines.ClusterShards(ctx, vc.Addrs[0])
	src, dst := shards[0], shards[1]
	q := queueOn("haz-", src.Slots[0][0], src.Slots[0][1])
	r := dialRouter(t, vc.Addrs, nil)
	sc := newScripts(r.Bundle())
	run := func(name, id, lane string, args ...any) {
		if v, err := sc.run(ctx, r, name, q, id, lane, nil, args...); err != nil {
			t.Fatalf("%s: %v", name, err)
		} else {
			t.Logf("%s -> %v", name, v.Text())
		}
	}
	// every declared key of reap present: active, pending, dead, errors, wake, laneof, lanes, ring
	x, d, p, l := newID(), newID(), newID(), newID() // expired, dead, pending, lane job
	run(lua.Enqueue, d, "", d, "pd", 0)
	run(lua.Claim, "", "", 30000)
	run(lua.Fail, d, "", d, 1, "boom")
	run(lua.Enqueue, x, "", x, "px", 0)
	run(lua.Claim, "", "", 1)
	run(lua.Enqueue, p, "", p, "pp", 0)
	run(lua.LaneEnqueue, l, "g1", l, "g1", "pl", 0)
	run(lua.LaneCeiling, "", "g1", "g1", 5)
	time.Sleep(5 * time.Millisecond)
	direct := func(addr string, args ...any) string {
		cn, err := connector.Dial(ctx, addr, connector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
		v, err := cn.Do(ctx, args...)
		t.Logf("%s %v -> %v %v %v", addr, args, v.Text(), len(v.Elems), err)
		return v.Text()
	}
	for _, k := range []string{"active", "pending", "dead", "errors", "wake", "laneof", "lanes", "ring"} {
		if direct(src.Primary, "EXISTS", "emq:{"+q+"}:"+k) != "1" {
			t.Fatalf("precondition: reap's declared key %s absent", k) // else the engine says TRYAGAIN
		}
	}
	slot := int(keysSlot(q))
	direct(dst.Primary, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.ID)
	direct(src.Primary, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.ID)
	host, port, _ := net.SplitHostPort(dst.Primary)
	direct(src.Primary, "MIGRATE", host, port, "", 0, 5000, "KEYS", "emq:{"+q+"}:job:"+x)
	_, reapErr := sc.run(ctx, r, lua.Reap, q, "", "", nil, 5, 10)
	if reapErr == nil || !strings.Contains(reapErr.Error(), "non local key") {
		t.Fatalf("reap during migration: %v, want the engine's non-local-key abort", reapErr)
	}
	// x left active (the source's active is gone with its last member: ASK) and is not pending.
	if got := direct(src.Primary, "ZSCORE", "emq:{"+q+"}:pending", x); got != "" {
		t.Fatalf("x pending: %q", got)
	}
	cn, err := connector.Dial(ctx, dst.Primary, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	vs, err := cn.Pipeline(ctx, connector.Cmd{Args: []any{"ASKING"}}, connector.Cmd{Args: []any{"HGET", "emq:{" + q + "}:job:" + x, "state"}})
	if err != nil || vs[1].Text() != "active" {
		t.Fatalf("x's row on the target: %v %v", vs, err)
	}
	t.Logf("pinned hazard: reap aborted mid-way (%v); job %s orphaned: row active on %s, in no index", reapErr, x, dst.Primary)
}
