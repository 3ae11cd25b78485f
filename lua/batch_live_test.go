package lua_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// claimBatch runs claim_batch and decodes its claims.
func (r *rig) claimBatch(leaseMs, n int) []claimed {
	r.t.Helper()
	v := r.ok(lua.ClaimBatch, "", "", leaseMs, n)
	if v.Type != resp.Array {
		r.t.Fatalf("claim_batch reply %v: want an array", v)
	}
	out := make([]claimed, len(v.Elems))
	for i, e := range v.Elems {
		if e.Type != resp.Array || len(e.Elems) != 4 || e.Elems[2].Type != resp.Integer {
			r.t.Fatalf("claim_batch claim %d = %v: want {id, payload, attempts, checkpoint|nil}", i, e)
		}
		out[i] = claimed{id: e.Elems[0].Text(), payload: e.Elems[1].Text(), token: e.Elems[2].Int}
		if !e.Elems[3].Null {
			s := e.Elems[3].Text()
			out[i].ckpt = &s
		}
	}
	return out
}

// completeBatch runs complete_batch on (id, token) pairs and returns one status per pair:
// nil for 1, else the pair's error.
func (r *rig) completeBatch(ids []string, tokens []int64) []error {
	r.t.Helper()
	var args []any
	for i := range ids {
		args = append(args, ids[i], tokens[i])
	}
	v, err := r.run(lua.CompleteBatch, r.batchKeys(lua.CompleteBatch, "", ids...), args...)
	if err != nil {
		r.t.Fatalf("complete_batch: %v", err)
	}
	if len(v.Elems) != len(ids) {
		r.t.Fatalf("complete_batch: %d statuses for %d pairs", len(v.Elems), len(ids))
	}
	out := make([]error, len(ids))
	for i, e := range v.Elems {
		switch {
		case e.Type == resp.Integer && e.Int == 1:
		case e.Type == resp.ErrorReply:
			out[i] = e.Err()
		default:
			r.t.Fatalf("complete_batch status %d = %v", i, e)
		}
	}
	return out
}

// enqueueBatch runs enqueue_batch on (id, payload, delay) triples and returns its 1/0s.
func (r *rig) enqueueBatch(jobs ...any) []int64 {
	r.t.Helper()
	var ids []string
	for i := 0; i < len(jobs); i += 3 {
		ids = append(ids, jobs[i].(string))
	}
	v, err := r.run(lua.EnqueueBatch, r.batchKeys(lua.EnqueueBatch, "", ids...), jobs...)
	if err != nil {
		r.t.Fatalf("enqueue_batch: %v", err)
	}
	out := make([]int64, len(v.Elems))
	for i, e := range v.Elems {
		if e.Type != resp.Integer {
			r.t.Fatalf("enqueue_batch status %d = %v", i, e)
		}
		out[i] = e.Int
	}
	return out
}

func TestLiveClaimBatch(t *testing.T) {
	r := newRig(t)
	if got := r.claimBatch(1000, 10); len(got) != 0 {
		t.Fatalf("claim_batch on an empty queue: %+v", got)
	}
	if ks := r.scan(); len(ks) != 0 {
		t.Fatalf("an empty claim_batch wrote %v", ks)
	}
	bin := "\x00\xff\r\n$-1\r\n"
	r.enqueue(id(1), "p1", 0)
	r.enqueue(id(2), "", 0)
	r.enqueue(id(3), bin, 0)
	r.enqueue(id(4), "p4", 0)
	r.enqueue(id(5), "p5", 0)
	r.enqueue(id(6), "later", 60000)
	r.do("DEL", r.q.Wake())
	t0 := r.now()
	got := r.claimBatch(30000, 3)
	t1 := r.now()
	if len(got) != 3 || got[0].id != id(1) || got[1].id != id(2) || got[2].id != id(3) ||
		got[0].payload != "p1" || got[1].payload != "" || got[2].payload != bin {
		t.Fatalf("claim_batch 3: %+v", got)
	}
	for _, c := range got {
		if c.token != 1 || c.ckpt != nil {
			t.Fatalf("first claim %+v: want token 1, no checkpoint", c)
		}
		if h := r.hash(r.row(c.id)); len(h) != 3 || h["state"] != "active" || h["attempts"] != "1" {
			t.Fatalf("claimed row %v", h)
		}
		if s, _ := r.score(r.q.Active(), c.id); s < t0+30000 || s > t1+30000 {
			t.Fatalf("lease %d, want within [%d, %d]", s, t0+30000, t1+30000)
		}
	}
	if len(r.members(r.q.Wake())) != 1 {
		t.Fatal("claim_batch did not re-arm the wake with work remaining")
	}
	r.do("DEL", r.q.Wake())
	if got := r.claimBatch(30000, 10); len(got) != 2 || got[0].id != id(4) || got[1].id != id(5) {
		t.Fatalf("claim_batch of the rest: %+v", got)
	}
	if len(r.members(r.q.Wake())) != 0 {
		t.Fatal("claim_batch re-armed the wake with nothing pending")
	}
	if got := r.claimBatch(30000, 10); len(got) != 0 {
		t.Fatalf("claim_batch took a scheduled job: %+v", got)
	}

	// A redelivery reads its checkpoint; a first claim in the same batch has none. An orphan id
	// (no row) is dropped, and the rest of the batch is claimed.
	r.ok(lua.Checkpoint, id(1), "", id(1), 1, "half")
	r.ok(lua.Retry, id(1), "", id(1), 1, 5, 0, "e")
	r.ok(lua.Retry, id(2), "", id(2), 1, 5, 0, "e")
	r.do("ZADD", r.q.Pending(), 0, id(0))
	r.enqueue(id(7), "p7", 0)
	got = r.claimBatch(30000, 10)
	if len(got) != 3 || got[0].id != id(1) || got[0].token != 2 || got[0].ckpt == nil || *got[0].ckpt != "half" ||
		got[1].id != id(2) || got[1].token != 2 || got[1].ckpt != nil || got[2].id != id(7) || got[2].token != 1 {
		t.Fatalf("claim_batch with redeliveries and an orphan: %+v", got)
	}
	if r.exists(r.q.Pending()) || r.exists(r.row(id(0))) {
		t.Fatal("the orphan id was not dropped")
	}

	// A ring with work keeps the wake armed for the lane consumers.
	r.laneEnqueue(id(8), "g1", "p", 0)
	r.enqueue(id(9), "p9", 0)
	r.do("DEL", r.q.Wake())
	if got := r.claimBatch(30000, 10); len(got) != 1 || got[0].id != id(9) || len(r.members(r.q.Wake())) != 1 {
		t.Fatalf("claim_batch with a lane serviceable: %+v, wake %v", got, r.members(r.q.Wake()))
	}

	// A queue-wide pause answers empty and changes nothing.
	r.enqueue(id(10), "p10", 0)
	r.ok(lua.Pause, "", "")
	before := r.snapshot()
	if got := r.claimBatch(30000, 10); len(got) != 0 || !equalSnap(before, r.snapshot()) {
		t.Fatalf("claim_batch on a paused queue: %+v", got)
	}
	// n is bounded.
	ks := r.keysFor(lua.ClaimBatch, "", "")
	for _, bad := range []any{0, 1001} {
		r.refused(emqerr.Arg, lua.ClaimBatch, ks, 30000, bad)
	}
}

func TestLiveCompleteBatch(t *testing.T) {
	r := newRig(t)
	for n := 1; n <= 5; n++ {
		r.enqueue(id(n), "p", 0)
	}
	r.ok(lua.LaneCeiling, "", "g1", "g1", 1)
	r.laneEnqueue(id(6), "g1", "p", 0)
	r.laneEnqueue(id(7), "g1", "p", 0) // waits behind the ceiling
	claims := r.claimBatch(60000, 4)   // ids 1..4
	lane := r.mustClaim(lua.LaneClaim, 60000)
	if lane.id != id(6) || r.exists(r.q.Ring()) {
		t.Fatalf("lane claim %+v, ring %v", lane, r.members(r.q.Ring()))
	}
	// id(4) gets a second life with a last error and a checkpoint.
	r.ok(lua.Retry, id(4), "", id(4), 1, 5, 0, "e")
	r.do("ZREM", r.q.Pending(), id(5))
	r.do("ZADD", r.q.Pending(), 0, id(5)) // id(5) stays pending
	again := r.claimBatch(60000, 1)
	if len(again) != 1 || again[0].id != id(4) || again[0].token != 2 {
		t.Fatalf("redelivery %+v", again)
	}
	r.ok(lua.Checkpoint, id(4), "", id(4), 2, "ck")
	r.ok(lua.Checkpoint, id(1), "", id(1), 1, "ck1")
	_ = claims

	bRow, bLease := r.do("DUMP", r.row(id(2))).Text(), r.do("ZSCORE", r.q.Active(), id(2)).Text()
	r.do("DEL", r.q.Wake())
	ids := []string{id(1), id(2), id(3), id(1), id(6), id(4), id(5), id(9)}
	tokens := []int64{1, 7, 1, 1, 1, 2, 1, 1}
	st := r.completeBatch(ids, tokens)
	want := []string{"", "EMQSTALE " + id(2) + " token 7 but attempts 1", "", "EMQSTALE " + id(1) + " no such job", "", "",
		"EMQSTALE " + id(5) + " is pending", "EMQSTALE " + id(9) + " no such job"}
	for i := range want {
		switch {
		case want[i] == "" && st[i] != nil:
			t.Errorf("pair %d (%s, %d): %v, want 1", i, ids[i], tokens[i], st[i])
		case want[i] != "" && (!errors.Is(st[i], emqerr.Stale) || st[i].Error() != want[i]):
			t.Errorf("pair %d (%s, %d): %v, want %q", i, ids[i], tokens[i], st[i], want[i])
		}
	}
	// The stale pairs changed nothing; the settled ones left nothing behind.
	if r.do("DUMP", r.row(id(2))).Text() != bRow || r.do("ZSCORE", r.q.Active(), id(2)).Text() != bLease ||
		r.state(id(5)) != "pending" {
		t.Fatal("a stale pair changed its job")
	}
	for _, done := range []string{id(1), id(3), id(4), id(6)} {
		if r.exists(r.row(done)) {
			t.Errorf("%s: row left", done)
		}
	}
	if got := r.members(r.q.Active()); !slices.Equal(got, []string{id(2)}) {
		t.Fatalf("active %v, want only %s", got, id(2))
	}
	if r.exists(r.q.Ckpt()) || r.exists(r.q.Errors()) {
		t.Fatalf("checkpoints %v errors %v left", r.hash(r.q.Ckpt()), r.hash(r.q.Errors()))
	}
	if lo := r.hash(r.q.LaneOf()); len(lo) != 1 || lo[id(7)] != "g1" {
		t.Fatalf("laneof %v: want only the waiting lane job", lo)
	}
	if _, ok := r.hash(r.q.Lanes())["active:g1"]; ok {
		t.Fatal("lane active count left behind")
	}
	if !slices.Equal(r.members(r.q.Ring()), []string{"g1"}) || len(r.members(r.q.Wake())) != 1 {
		t.Fatalf("lane below its ceiling: ring %v wake %v, want [g1] armed", r.members(r.q.Ring()), r.members(r.q.Wake()))
	}

	// A batch of only stale pairs changes nothing at all, including a lease that has passed.
	c := r.claimBatch(1, 1)
	time.Sleep(10 * time.Millisecond)
	before := r.snapshot()
	st = r.completeBatch([]string{c[0].id, id(2)}, []int64{c[0].token, 9})
	if st[0] == nil || !strings.HasSuffix(st[0].Error(), "lease passed") || !errors.Is(st[1], emqerr.Stale) {
		t.Fatalf("stale-only batch: %v", st)
	}
	if !equalSnap(before, r.snapshot()) {
		t.Fatal("a batch of stale pairs changed the keyspace")
	}

	// A row key that disagrees with its id is EMQARG, even for a later pair.
	ks := r.batchKeys(lua.CompleteBatch, "", id(2), id(7))
	r.refused(emqerr.Arg, lua.CompleteBatch, ks, id(2), 1, id(3), 1)
	r.refused(emqerr.Arg, lua.CompleteBatch, ks, id(2), 1, id(7), 0)
	r.refused(emqerr.Arg, lua.CompleteBatch, r.batchKeys(lua.CompleteBatch, "", id(2)), id(2), 1, id(7), 1)
}

func TestLiveEnqueueBatch(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(0), "old", 0)
	oldRow := r.do("DUMP", r.row(id(0))).Text()
	r.do("DEL", r.q.Wake())
	t0 := r.now()
	got := r.enqueueBatch(id(2), "p2", 0, id(1), "", 0, id(2), "other", 0, id(3), "later", 60000, id(0), "new", 0)
	t1 := r.now()
	if !slices.Equal(got, []int64{1, 1, 0, 1, 0}) {
		t.Fatalf("enqueue_batch = %v", got)
	}
	if h := r.hash(r.row(id(2))); len(h) != 3 || h["state"] != "pending" || h["attempts"] != "0" || h["payload"] != "p2" {
		t.Fatalf("row %v", h)
	}
	if h := r.hash(r.row(id(1))); len(h) != 3 || h["payload"] != "" {
		t.Fatalf("row %v", h)
	}
	if r.do("DUMP", r.row(id(0))).Text() != oldRow {
		t.Fatal("a duplicate id changed its row")
	}
	if got := r.members(r.q.Pending()); !slices.Equal(got, []string{id(0), id(1), id(2)}) {
		t.Fatalf("pending %v", got)
	}
	if s, _ := r.score(r.q.Scheduled(), id(3)); s < t0+60000 || s > t1+60000 || r.state(id(3)) != "scheduled" {
		t.Fatalf("scheduled at %d, want within [%d, %d]", s, t0+60000, t1+60000)
	}
	if len(r.members(r.q.Wake())) != 1 {
		t.Fatal("enqueue_batch did not arm the wake")
	}
	// All duplicates: zeros, and not a byte changes (the wake is not armed).
	r.do("DEL", r.q.Wake())
	before := r.snapshot()
	if got := r.enqueueBatch(id(1), "x", 0, id(3), "y", 5); !slices.Equal(got, []int64{0, 0}) || !equalSnap(before, r.snapshot()) {
		t.Fatalf("duplicate batch = %v or the keyspace changed", got)
	}
	// A delayed job alone arms the wake, as enqueue.
	r.enqueueBatch(id(4), "d", 5)
	if len(r.members(r.q.Wake())) != 1 {
		t.Fatal("a delayed enqueue_batch did not arm the wake")
	}
	// Any bad item refuses the whole batch before a write.
	ks := r.batchKeys(lua.EnqueueBatch, "", id(5), id(6))
	r.refused(emqerr.Arg, lua.EnqueueBatch, ks, id(5), "p", 0, id(7), "p", 0)
	r.refused(emqerr.Arg, lua.EnqueueBatch, ks, id(5), "p", 0, id(6), "p", -1)
	r.refused(emqerr.Arg, lua.EnqueueBatch, ks, id(5), "p", 0, "ORD"+id(6)[3:], "p", 0)
	r.refused(emqerr.Arg, lua.EnqueueBatch, ks[:len(ks)-1], id(5), "p", 0, id(6), "p", 0)
}

// The bounds: 1000 items work in one call each (Lua's unpack limit is not reached); 1001 are
// EMQARG and change nothing.
func TestLiveBatchBounds(t *testing.T) {
	r := newRig(t)
	var jobs []any
	var ids []string
	for n := 1; n <= 1001; n++ {
		ids = append(ids, id(n))
		jobs = append(jobs, id(n), "p", 0)
	}
	r.refused(emqerr.Arg, lua.EnqueueBatch, r.batchKeys(lua.EnqueueBatch, "", ids...), jobs...)
	got := r.enqueueBatch(jobs[:3000]...)
	if len(got) != 1000 || slices.Contains(got, 0) || r.do("ZCARD", r.q.Pending()).Int != 1000 {
		t.Fatalf("enqueue_batch of 1000: %d replies, %d pending", len(got), r.do("ZCARD", r.q.Pending()).Int)
	}
	claims := r.claimBatch(60000, 1000)
	if len(claims) != 1000 || claims[0].id != id(1) || claims[999].id != id(1000) {
		t.Fatalf("claim_batch of 1000: %d claims", len(claims))
	}
	tokens := make([]int64, 1001)
	for i := range tokens {
		tokens[i] = 1
	}
	var args []any
	for i := range ids {
		args = append(args, ids[i], tokens[i])
	}
	r.refused(emqerr.Arg, lua.CompleteBatch, r.batchKeys(lua.CompleteBatch, "", ids...), args...)
	for i, err := range r.completeBatch(ids[:1000], tokens[:1000]) {
		if err != nil {
			t.Fatalf("pair %d: %v", i, err)
		}
	}
	if left := r.scan(); len(left) != 1 || left[0] != r.q.Wake() {
		t.Fatalf("after completing every job: %v", left)
	}
}
