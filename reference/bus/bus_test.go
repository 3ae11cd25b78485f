package bus_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

func TestEnqueueClaimComplete(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)

	e, err := b.Enqueue(ctx, q, []byte("hello"))
	if err != nil || !e.Created {
		t.Fatalf("enqueue = %+v, %v", e, err)
	}
	if _, err := ids.ParseJob(e.ID); err != nil || len(e.ID) != ids.Len {
		t.Fatalf("id %q: %v", e.ID, err)
	}
	row := "emq:{" + q + "}:job:" + e.ID
	if got, want := in.hash(row), map[string]string{"state": "pending", "attempts": "0", "payload": "hello"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("row = %v, want %v", got, want)
	}
	if got := in.strs("ZRANGE", "emq:{"+q+"}:pending", 0, -1); !slices.Equal(got, []string{e.ID}) {
		t.Fatalf("pending = %v", got)
	}
	if n := in.int("LLEN", "emq:{"+q+"}:wake"); n != 1 {
		t.Fatalf("wake length %d, want 1", n)
	}

	before := in.now()
	j, err := b.Claim(ctx, q, bus.Ms(30*time.Second)) // a lease the checks below cannot outlast
	after := in.now()
	if err != nil || j == nil {
		t.Fatalf("claim = %v, %v", j, err)
	}
	if j.ID != e.ID || j.Token != 1 || string(j.Payload) != "hello" || j.LastCheckpoint != nil {
		t.Fatalf("claimed %+v", j)
	}
	if st := in.hash(row)["state"]; st != "active" {
		t.Fatalf("state %q", st)
	}
	if d := in.score("emq:{"+q+"}:active", e.ID); d < before+30000 || d > after+30000 {
		t.Fatalf("deadline %d not in server [%d, %d] + 30000", d, before, after)
	}
	if j2, err := b.Claim(ctx, q, bus.Ms(time.Second)); err != nil || j2 != nil {
		t.Fatalf("claim of an empty queue = %v, %v", j2, err)
	}

	if err := j.Complete(ctx); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if ks := in.residue(q); len(ks) != 0 {
		t.Fatalf("keys left after complete: %v", ks)
	}
}

func TestEnqueueDelayedAndPromote(t *testing.T) {
	ctx, b, in := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr)
	leaveNoForeignKeys(t, in)
	var q string
	var e bus.Enqueued
	var due int64
	// The early checks count only when they ran before the due time on the server's clock; on a
	// machine slower than the delay, the scenario runs again on a fresh queue with a longer one.
	beforeDue(t, 80*time.Millisecond, func(delay time.Duration) bool {
		q = qname(t)
		before := in.now()
		var err error
		if e, err = b.Enqueue(ctx, q, []byte("later"), bus.WithDelay(delay)); err != nil {
			t.Fatal(err)
		}
		if st := in.hash("emq:{" + q + "}:job:" + e.ID)["state"]; st != "scheduled" {
			t.Fatalf("state %q", st)
		}
		due = in.score("emq:{"+q+"}:scheduled", e.ID)
		if due < before+delay.Milliseconds() || due > in.now()+delay.Milliseconds() {
			t.Fatalf("due %d, enqueued at ~%d with a delay of %s", due, before, delay)
		}
		n, err := b.Promote(ctx, q, 100)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
		if in.now() >= due {
			return false // too late to tell an early promote from a due one
		}
		if n != 0 {
			t.Fatalf("early promote = %d", n)
		}
		if j != nil {
			t.Fatal("a scheduled job was claimable before it was due")
		}
		return true
	})
	in.waitServerPast(due)
	if n, err := b.Promote(ctx, q, 100); err != nil || n != 1 {
		t.Fatalf("promote = %d, %v", n, err)
	}
	j, err := b.Claim(ctx, q, bus.Ms(time.Second))
	if err != nil || j == nil || j.ID != e.ID {
		t.Fatalf("claim after promote = %v, %v", j, err)
	}
	if err := j.Complete(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDuplicateChangesNothing(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	id, _ := b.Mint(ctx)
	e, err := b.Enqueue(ctx, q, []byte("one"), bus.WithID(id))
	if err != nil || !e.Created || e.ID != id {
		t.Fatalf("first = %+v, %v", e, err)
	}
	in.do("LPOP", "emq:{"+q+"}:wake") // so a re-arm would show
	snap := func() string {
		var buf bytes.Buffer
		for _, k := range in.queueKeys(q) {
			fmt.Fprintf(&buf, "%s %v\n", k, in.do("DUMP", k).Str)
		}
		return buf.String()
	}
	before := snap()
	e, err = b.Enqueue(ctx, q, []byte("two"), bus.WithID(id))
	if err != nil || e.Created {
		t.Fatalf("duplicate = %+v, %v", e, err)
	}
	if after := snap(); after != before {
		t.Fatalf("duplicate changed the keyspace:\n%s\nvs\n%s", before, after)
	}
}

func TestKeyBuilderRefusesBeforeTheWire(t *testing.T) {
	var wire bytes.Buffer
	b := openBus(t, addr, bus.Options{Tap: &wire})
	ctx, q := ctxT(t), qname(t)
	good, _ := b.Mint(ctx)
	wire.Reset()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"upper-case queue", func() error { _, err := b.Enqueue(ctx, "Orders", nil); return err }, emqerr.Key},
		{"empty queue", func() error { _, err := b.Claim(ctx, "", bus.Ms(time.Second)); return err }, emqerr.Key},
		{"brace in queue", func() error { _, err := b.Enqueue(ctx, "a}b", nil); return err }, emqerr.Key},
		{"65-byte queue", func() error { _, err := b.Enqueue(ctx, string(bytes.Repeat([]byte("q"), 65)), nil); return err }, emqerr.Key},
		{"bad lane", func() error { _, err := b.Enqueue(ctx, q, nil, bus.WithLane("A B")); return err }, emqerr.Key},
		{"wrong brand", func() error { _, err := b.Enqueue(ctx, q, nil, bus.WithID("ORD"+good[3:])); return err }, emqerr.Kind},
		{"short id", func() error { return b.Complete(ctx, q, good[:13], 1) }, emqerr.Key},
		{"id outside base62", func() error { return b.Complete(ctx, q, good[:13]+"-", 1) }, emqerr.Key},
		{"key op: bad kind", func() error { _, err := b.Key(q, "stray", "", ""); return err }, emqerr.Key},
		{"key op: wrong brand", func() error { _, err := b.Key(q, "job", "USR0KHTOWnGLuC", ""); return err }, emqerr.Kind},
	}
	for _, c := range cases {
		mustType(t, c.call(), c.want)
	}
	if wire.Len() != 0 {
		t.Fatalf("refused calls wrote to the server: %q", wire.String())
	}
	if k, err := b.Key(q, "job", good, ""); err != nil || k != "emq:{"+q+"}:job:"+good {
		t.Fatalf("key = %q, %v", k, err)
	}
	kq, _ := keys.Queue(q)
	for _, kind := range keys.QueueKinds() {
		want, _ := kq.Key(kind)
		if k, err := b.Key(q, string(kind), "", ""); err != nil || k != want {
			t.Fatalf("key %s = %q, %v; want %q", kind, k, err, want)
		}
	}
}

func TestStaleRefusalsChangeNothing(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	e, _ := b.Enqueue(ctx, q, []byte("p"))
	j, err := b.Claim(ctx, q, bus.Ms(30*time.Second)) // a lease the refusals below cannot outlast
	if err != nil || j == nil {
		t.Fatal(j, err)
	}
	row := "emq:{" + q + "}:job:" + e.ID
	active := "emq:{" + q + "}:active"
	rowBefore, deadline := in.hash(row), in.score(active, e.ID)

	mustType(t, b.Complete(ctx, q, e.ID, 2), emqerr.Stale)
	_, err = b.Retry(ctx, q, e.ID, 7, 5, 0, "x")
	mustType(t, err, emqerr.Stale)
	mustType(t, b.Fail(ctx, q, e.ID, 0+3, "x"), emqerr.Stale)
	mustType(t, b.Checkpoint(ctx, q, e.ID, 2, []byte("c")), emqerr.Stale)
	_, err = b.Extend(ctx, q, e.ID, 2, bus.Ms(time.Second))
	mustType(t, err, emqerr.Stale)
	other, _ := b.Mint(ctx)
	mustType(t, b.Complete(ctx, q, other, 1), emqerr.Stale) // no such job
	if !reflect.DeepEqual(in.hash(row), rowBefore) || in.score(active, e.ID) != deadline {
		t.Fatal("a refused transition changed the job")
	}
	if in.int("HEXISTS", "emq:{"+q+"}:ckpt", e.ID) != 0 || in.int("HEXISTS", "emq:{"+q+"}:errors", e.ID) != 0 {
		t.Fatal("a refused transition wrote a checkpoint or an error")
	}

	// Extend moves the deadline to server TIME + its lease; then let the lease pass on the
	// server's clock.
	before := in.now()
	nd, err := j.Extend(ctx, bus.Ms(150*time.Millisecond))
	if err != nil || nd != in.score(active, e.ID) || nd < before+150 || nd > in.now()+150 || nd == deadline {
		t.Fatalf("extend = %d, %v (deadline %d, server now %d)", nd, err, deadline, before)
	}
	in.waitServerPast(nd)
	// Expired before any reaper ran: the live token is refused too.
	mustType(t, j.Complete(ctx), emqerr.Stale)
	mustType(t, j.Checkpoint(ctx, []byte("late")), emqerr.Stale)
	if !reflect.DeepEqual(in.hash(row), rowBefore) {
		t.Fatal("the refused complete changed the row")
	}
	// Wrong state: a pending job cannot be completed.
	if n, _ := b.Reap(ctx, q, 5, 100); n != 1 {
		t.Fatalf("reap = %d", n)
	}
	mustType(t, b.Complete(ctx, q, e.ID, 1), emqerr.Stale)
	if st := in.hash(row)["state"]; st != "pending" {
		t.Fatalf("state after reap %q", st)
	}
	j, _ = b.Claim(ctx, q, bus.Ms(time.Second))
	if j.Token != 2 {
		t.Fatalf("token after reap %d", j.Token)
	}
	if err := j.Complete(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRetryBackoffAndMorgue(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	e, _ := b.Enqueue(ctx, q, []byte("p"))
	row := "emq:{" + q + "}:job:" + e.ID
	j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
	dead, err := j.Retry(ctx, 2, bus.Ms(60*time.Millisecond), "boom 1")
	if err != nil || dead {
		t.Fatalf("retry = %v, %v", dead, err)
	}
	if st := in.hash(row)["state"]; st != "scheduled" {
		t.Fatalf("state %q", st)
	}
	if got := string(in.do("HGET", "emq:{"+q+"}:errors", e.ID).Str); got != "boom 1" {
		t.Fatalf("last error %q", got)
	}
	if in.int("ZCARD", "emq:{"+q+"}:active") != 0 {
		t.Fatal("retried job still active")
	}
	in.waitServerPast(in.score("emq:{"+q+"}:scheduled", e.ID))
	if n, _ := b.Promote(ctx, q, 10); n != 1 {
		t.Fatalf("promote %d", n)
	}
	j, _ = b.Claim(ctx, q, bus.Ms(time.Second))
	if j == nil || j.Token != 2 {
		t.Fatalf("second claim %+v", j)
	}
	dead, err = j.Retry(ctx, 2, 0, "boom 2")
	if err != nil || !dead {
		t.Fatalf("retry at max = %v, %v", dead, err)
	}
	if st := in.hash(row)["state"]; st != "dead" {
		t.Fatalf("state %q", st)
	}
	m, err := b.Morgue(ctx, q, 10)
	if err != nil || len(m) != 1 || m[0].ID != e.ID || m[0].Attempts != 2 || m[0].Error != "boom 2" || string(m[0].Payload) != "p" || m[0].Died <= 0 {
		t.Fatalf("morgue = %+v, %v", m, err)
	}
	if ok, err := b.Purge(ctx, q, "JOB00000000000"); err != nil || ok {
		t.Fatalf("purge of a job not dead = %v, %v", ok, err)
	}
	if ok, err := b.Revive(ctx, q, e.ID); err != nil || !ok {
		t.Fatalf("revive = %v, %v", ok, err)
	}
	if ok, _ := b.Revive(ctx, q, e.ID); ok {
		t.Fatal("revived a job that is not dead")
	}
	if got := in.hash(row); got["state"] != "pending" || got["attempts"] != "2" {
		t.Fatalf("revived row %v", got)
	}
	j, _ = b.Claim(ctx, q, bus.Ms(time.Second))
	if j.Token != 3 {
		t.Fatalf("token after revive %d", j.Token)
	}
	if err := j.Fail(ctx, "fatal"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Purge(ctx, q, e.ID); err != nil || !ok {
		t.Fatalf("purge = %v, %v", ok, err)
	}
	if ks := in.residue(q); len(ks) != 0 {
		t.Fatalf("keys left after purge: %v", ks)
	}
}

// One job, two lives, one counter: a holder crashes after a checkpoint; the reaper returns the
// job; the zombie is refused; the redelivery reads the checkpoint and completes.
func TestCrashAndRedeliverWithCheckpoint(t *testing.T) {
	ctx, in, q := ctxT(t), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	producer := openBus(t, addr, bus.Options{})
	e, _ := producer.Enqueue(ctx, q, []byte("work"))

	crashed, err := bus.Open(ctx, addr, bus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The holder's lease outlasts every check made while it lives; its last act is a short
	// extension, so its death is noticed without a long wait.
	j, _ := crashed.Claim(ctx, q, bus.Ms(30*time.Second))
	if err := j.Checkpoint(ctx, []byte("step 3")); err != nil {
		t.Fatal(err)
	}
	if n, _ := producer.Reap(ctx, q, 5, 100); n != 0 {
		t.Fatalf("reaped a live lease: %d", n)
	}
	deadline, err := j.Extend(ctx, bus.Ms(60*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	crashed.Close() // the holder dies
	in.waitServerPast(deadline)
	if n, err := producer.Reap(ctx, q, 5, 100); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v", n, err)
	}
	mustType(t, producer.Complete(ctx, q, j.ID, j.Token), emqerr.Stale) // the zombie
	j2, err := producer.Claim(ctx, q, bus.Ms(time.Second))
	if err != nil || j2 == nil || j2.ID != e.ID || j2.Token != 2 || string(j2.LastCheckpoint) != "step 3" {
		t.Fatalf("redelivery = %+v, %v", j2, err)
	}
	if err := j2.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if ks := in.residue(q); len(ks) != 0 {
		t.Fatalf("keys left: %v", ks)
	}
}

func TestReapBuriesAtMaxAttempts(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	e, _ := b.Enqueue(ctx, q, nil)
	b.Claim(ctx, q, bus.Ms(30*time.Millisecond))
	in.waitServerPast(in.score("emq:{"+q+"}:active", e.ID))
	if n, _ := b.Reap(ctx, q, 1, 100); n != 1 {
		t.Fatalf("reap %d", n)
	}
	m, _ := b.Morgue(ctx, q, 10)
	if len(m) != 1 || m[0].Error != "lease expired" || m[0].Attempts != 1 {
		t.Fatalf("morgue %+v", m)
	}
	b.Purge(ctx, q, e.ID)
}

func TestQueuePause(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	b.Enqueue(ctx, q, nil)
	b.Enqueue(ctx, q, nil, bus.WithLane("g"))
	if err := b.Pause(ctx, q); err != nil {
		t.Fatal(err)
	}
	in.do("DEL", "emq:{"+q+"}:wake")
	if j, err := b.Claim(ctx, q, bus.Ms(time.Second)); err != nil || j != nil {
		t.Fatalf("claim while paused = %v, %v", j, err)
	}
	if j, err := b.LaneClaim(ctx, q, bus.Ms(time.Second)); err != nil || j != nil {
		t.Fatalf("lane claim while paused = %v, %v", j, err)
	}
	if in.int("ZCARD", "emq:{"+q+"}:pending") != 1 || in.int("LLEN", "emq:{"+q+"}:ring") != 1 {
		t.Fatal("pause lost work or touched the ring")
	}
	if err := b.Resume(ctx, q); err != nil {
		t.Fatal(err)
	}
	if in.int("LLEN", "emq:{"+q+"}:wake") != 1 {
		t.Fatal("resume with work waiting did not arm the wake")
	}
	j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
	lj, _ := b.LaneClaim(ctx, q, bus.Ms(time.Second))
	if j == nil || lj == nil || lj.Lane != "g" {
		t.Fatalf("claims after resume: %v %v", j, lj)
	}
	j.Complete(ctx)
	lj.Complete(ctx)
}

func TestEnqueueBatch(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	dup, _ := b.Mint(ctx)
	b.Enqueue(ctx, q, []byte("x"), bus.WithID(dup))
	msgs := []bus.Message{{Payload: []byte("a")}, {ID: dup, Payload: []byte("b")}, {Payload: []byte("c"), Lane: "l1"}, {Payload: []byte("d"), Delay: bus.Ms(time.Hour)}}
	out, err := b.EnqueueBatch(ctx, q, msgs)
	if err != nil || len(out) != 4 {
		t.Fatalf("batch = %v, %v", out, err)
	}
	if !out[0].Created || out[1].Created || out[1].ID != dup || !out[2].Created || !out[3].Created {
		t.Fatalf("batch results %+v", out)
	}
	if in.int("ZCARD", "emq:{"+q+"}:pending") != 2 || in.int("ZCARD", "emq:{"+q+"}:lane:l1") != 1 || in.int("ZCARD", "emq:{"+q+"}:scheduled") != 1 {
		t.Fatal("batch did not land where it should")
	}
	_, err = b.EnqueueBatch(ctx, q, []bus.Message{{Payload: nil}, {ID: "BAD", Payload: nil}})
	mustType(t, err, emqerr.Key)
	// drain
	for {
		j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
		if j == nil {
			break
		}
		j.Complete(ctx)
	}
	lj, _ := b.LaneClaim(ctx, q, bus.Ms(time.Second))
	lj.Complete(ctx)
}

// Ids minted in sequence across concurrent callers sort in mint order per caller, and claims
// come oldest first.
func TestClaimOldestFirst(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	var want []string
	for i := 0; i < 50; i++ {
		e, err := b.Enqueue(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	if !sort.StringsAreSorted(want) {
		t.Fatal("ids not in mint order")
	}
	for i, id := range want {
		j, _ := b.Claim(ctx, q, bus.Ms(time.Second))
		if j == nil || j.ID != id {
			t.Fatalf("claim %d = %v, want %s", i, j, id)
		}
		j.Complete(ctx)
	}
}

func TestArgumentRefusals(t *testing.T) {
	ctx, b, q := ctxT(t), openBus(t, addr, bus.Options{}), qname(t)
	_, err := b.Claim(ctx, q, 0)
	mustType(t, err, emqerr.Arg)
	_, err = b.Enqueue(ctx, q, nil, bus.WithDelay(-time.Second))
	mustType(t, err, emqerr.Arg)
	mustType(t, b.LaneCeiling(ctx, q, "g", -1), emqerr.Arg)
	_, err = b.Morgue(ctx, q, 0)
	mustType(t, err, emqerr.Arg)
	_, err = b.Reap(ctx, q, 0, 10) // the script refuses max_attempts 0
	mustType(t, err, emqerr.Arg)
}
