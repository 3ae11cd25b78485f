// Package interop checks that two runtimes share one EchoMQ deployment as equals: jobs enqueued
// by the Go reference bus are claimed and settled by the Node port and the reverse, with the
// fencing token and the lease honoured across the runtime boundary. The Node port is driven over
// its stdio protocol through the subprocess driver, exactly as the certification harness drives it.
package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/subprocess"
	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/redis/go-redis/v9"
)

const queue = "interop"

// rig is one Valkey, a Go bus and a Node port session on it.
type rig struct {
	ctx  context.Context
	raw  *redis.Client // the test's own connection, for inspection and sabotage
	gob  *bus.Bus
	node drivers.Driver
	hi   protocol.HelloResult
}

func nodeDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the interop package directory")
	}
	return filepath.Join(filepath.Dir(file), "..", "ports", "node")
}

func setup(t *testing.T) *rig {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the cross-runtime checks need the Node port (ports/node)")
	}
	v := enginestest.Valkey(t)
	// No deadline: the Node port's start and the subtests take what a busy machine gives them;
	// a hang is the go test -timeout's to report.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	gob, err := bus.Open(ctx, v.Addr, bus.Options{})
	if err != nil {
		t.Fatalf("go bus: %v", err)
	}
	t.Cleanup(func() { gob.Close() })

	f, err := subprocess.New("node port.js", subprocess.Options{Dir: nodeDir(t), Name: "node"})
	if err != nil {
		t.Fatalf("subprocess factory: %v", err)
	}
	d, err := f.Start(ctx)
	if err != nil {
		t.Fatalf("start node port: %v", err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	hi, err := d.Hello(ctx, protocol.HelloArgs{Valkey: v.Addr})
	if err != nil {
		t.Fatalf("node hello: %v", err)
	}
	raw := redis.NewClient(&redis.Options{Addr: v.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { raw.Close() })
	return &rig{ctx: ctx, raw: raw, gob: gob, node: d, hi: hi}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// lease is the lease of a claim whose holder is checked live a few calls later: two seconds, no
// busy machine's pause between two calls (a 200 or 300 ms one raced them).
const lease = 2 * time.Second

// deadline is job id's lease deadline on the server (its score in active).
func (r *rig) deadline(t *testing.T, id string) int64 {
	t.Helper()
	d, err := r.raw.ZScore(r.ctx, "emq:{"+queue+"}:active", id).Result()
	if err != nil {
		t.Fatalf("the deadline of %s: %v", id, err)
	}
	return int64(d)
}

// blocked counts the server's clients blocked on a command (parked consumers).
func (r *rig) blocked(t *testing.T) int {
	t.Helper()
	info, err := r.raw.Info(r.ctx, "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("INFO clients has no blocked_clients:\n%s", info)
	return 0
}

// waitServerPast waits until the server's clock, which owns leases, is past ms.
func (r *rig) waitServerPast(t *testing.T, ms int64) {
	t.Helper()
	await.Until(t, fmt.Sprintf("the server clock past %d", ms), func() bool {
		now, err := r.raw.Time(r.ctx).Result()
		return err == nil && now.UnixMilli() > ms
	})
}

func fence(q, id string, token int64) protocol.FenceArgs {
	return protocol.FenceArgs{Queue: q, ID: id, Token: token}
}

func mustStale(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, emqerr.Stale) {
		t.Fatalf("%s: want EMQSTALE, got %v", what, err)
	}
}

func TestCrossRuntime(t *testing.T) {
	r := setup(t)
	ctx := r.ctx

	t.Run("one bundle, disjoint minters", func(t *testing.T) {
		if r.hi.Digest != r.gob.Digest() {
			t.Fatalf("bundle digest: node %s, go %s", r.hi.Digest, r.gob.Digest())
		}
		goID, err := r.gob.Mint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.node.Mint(ctx, protocol.MintArgs{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		gs, err := ids.ParseJob(goID)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := ids.ParseJob(m.IDs[0][0])
		if err != nil {
			t.Fatalf("node minted %q: %v", m.IDs[0][0], err)
		}
		_, gw, _ := ids.Split(gs)
		_, nw, _ := ids.Split(ns)
		if gw == nw {
			t.Fatalf("both runtimes mint under worker id %d: the leases must keep them apart", gw)
		}
	})

	t.Run("go enqueues, node claims, go's extension keeps node's lease", func(t *testing.T) {
		payload := []byte("from go \x00\xff")
		e, err := r.gob.Enqueue(ctx, queue, payload)
		if err != nil || !e.Created {
			t.Fatalf("go enqueue: %+v %v", e, err)
		}
		dup, err := r.node.Enqueue(ctx, protocol.EnqueueArgs{Queue: queue, ID: e.ID, PayloadB64: b64([]byte("other"))})
		if err != nil || dup.Created {
			t.Fatalf("node re-enqueue of a go id must be a duplicate: %+v %v", dup, err)
		}
		c, err := r.node.Claim(ctx, protocol.ClaimArgs{Queue: queue, LeaseMS: lease.Milliseconds()})
		if err != nil || c == nil {
			t.Fatalf("node claim: %+v %v", c, err)
		}
		if c.ID != e.ID || c.Token != 1 || c.PayloadB64 != b64(payload) {
			t.Fatalf("node claimed %+v, want %s token 1 with go's payload", c, e.ID)
		}
		own := r.deadline(t, e.ID)
		// The Go runtime holds no claim, but the token is the job's, not the runtime's.
		mustStale(t, "go complete with a token never issued", r.gob.Complete(ctx, queue, e.ID, 2))
		dl, err := r.gob.Extend(ctx, queue, e.ID, 1, bus.Ms(30*time.Second))
		if err != nil {
			t.Fatalf("go extends node's lease: %v", err)
		}
		r.waitServerPast(t, own) // past node's own lease
		n, err := r.node.Reap(ctx, protocol.ReapArgs{Queue: queue, MaxAttempts: 5})
		if err != nil || n.Count != 0 {
			t.Fatalf("node reap after go's extension: %+v %v (want 0: the lease lives)", n, err)
		}
		ne, err := r.node.Extend(ctx, protocol.ExtendArgs{FenceArgs: fence(queue, e.ID, 1), LeaseMS: 30000})
		if err != nil || ne.DeadlineMS < dl {
			t.Fatalf("node extend: %+v %v (go's deadline %d)", ne, err, dl)
		}
		if err := r.node.Complete(ctx, fence(queue, e.ID, 1)); err != nil {
			t.Fatalf("node complete: %v", err)
		}
		mustStale(t, "go complete after node completed", r.gob.Complete(ctx, queue, e.ID, 1))
	})

	t.Run("node enqueues, go claims, node's stale token refused", func(t *testing.T) {
		payload := []byte("from node")
		e, err := r.node.Enqueue(ctx, protocol.EnqueueArgs{Queue: queue, PayloadB64: b64(payload)})
		if err != nil || !e.Created {
			t.Fatalf("node enqueue: %+v %v", e, err)
		}
		again, err := r.gob.Enqueue(ctx, queue, []byte("x"), bus.WithID(e.ID))
		if err != nil || again.Created {
			t.Fatalf("go re-enqueue of a node id must be a duplicate: %+v %v", again, err)
		}
		j, err := r.gob.Claim(ctx, queue, bus.Ms(lease))
		if err != nil || j == nil {
			t.Fatalf("go claim: %+v %v", j, err)
		}
		if j.ID != e.ID || j.Token != 1 || !bytes.Equal(j.Payload, payload) {
			t.Fatalf("go claimed %s token %d %q, want %s token 1 %q", j.ID, j.Token, j.Payload, e.ID, payload)
		}
		own := r.deadline(t, e.ID)
		mustStale(t, "node complete with a wrong token", r.node.Complete(ctx, fence(queue, e.ID, 2)))
		if _, err := r.node.Extend(ctx, protocol.ExtendArgs{FenceArgs: fence(queue, e.ID, 1), LeaseMS: 30000}); err != nil {
			t.Fatalf("node extends go's lease: %v", err)
		}
		r.waitServerPast(t, own) // past go's own lease
		if n, err := r.gob.Reap(ctx, queue, 5, 100); err != nil || n != 0 {
			t.Fatalf("go reap after node's extension: %d %v (want 0)", n, err)
		}
		if err := j.Complete(ctx); err != nil {
			t.Fatalf("go complete: %v", err)
		}
	})

	t.Run("a zombie in one runtime, the redelivery in the other", func(t *testing.T) {
		e, err := r.gob.Enqueue(ctx, queue, []byte("crashy"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.node.Claim(ctx, protocol.ClaimArgs{Queue: queue, LeaseMS: lease.Milliseconds()})
		if err != nil || c == nil || c.ID != e.ID {
			t.Fatalf("node claim: %+v %v", c, err)
		}
		saved := []byte("step 3 of 7")
		if err := r.node.Checkpoint(ctx, protocol.CheckpointArgs{FenceArgs: fence(queue, c.ID, c.Token), DataB64: b64(saved)}); err != nil {
			t.Fatalf("node checkpoint: %v", err)
		}
		r.waitServerPast(t, r.deadline(t, c.ID)) // node "crashed": its lease passes
		mustStale(t, "node complete on a passed lease", r.node.Complete(ctx, fence(queue, c.ID, c.Token)))
		if n, err := r.gob.Reap(ctx, queue, 5, 100); err != nil || n != 1 {
			t.Fatalf("go reap: %d %v (want 1)", n, err)
		}
		j, err := r.gob.Claim(ctx, queue, bus.Ms(30*time.Second))
		if err != nil || j == nil || j.ID != e.ID || j.Token != 2 {
			t.Fatalf("go redelivery: %+v %v (want %s token 2)", j, err, e.ID)
		}
		if !bytes.Equal(j.LastCheckpoint, saved) {
			t.Fatalf("go redelivery reads checkpoint %q, want node's %q", j.LastCheckpoint, saved)
		}
		mustStale(t, "node zombie complete", r.node.Complete(ctx, fence(queue, c.ID, 1)))
		if err := j.Complete(ctx); err != nil {
			t.Fatalf("go complete: %v", err)
		}
		if c, err := r.node.Claim(ctx, protocol.ClaimArgs{Queue: queue, LeaseMS: 1000}); err != nil || c != nil {
			t.Fatalf("queue must be empty: %+v %v", c, err)
		}
	})

	t.Run("node buries, go browses and revives, node reclaims", func(t *testing.T) {
		e, err := r.gob.Enqueue(ctx, queue, []byte("doomed"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.node.Claim(ctx, protocol.ClaimArgs{Queue: queue, LeaseMS: 30000})
		if err != nil || c == nil || c.ID != e.ID {
			t.Fatalf("node claim: %+v %v", c, err)
		}
		rr, err := r.node.Retry(ctx, protocol.RetryArgs{FenceArgs: fence(queue, c.ID, c.Token), MaxAttempts: 1, Error: "boom in node"})
		if err != nil || rr.Outcome != "dead" {
			t.Fatalf("node retry at the limit: %+v %v", rr, err)
		}
		dead, err := r.gob.Morgue(ctx, queue, 10)
		if err != nil || len(dead) != 1 || dead[0].ID != e.ID || dead[0].Error != "boom in node" || dead[0].Attempts != 1 {
			t.Fatalf("go morgue: %+v %v", dead, err)
		}
		if ok, err := r.gob.Revive(ctx, queue, e.ID); err != nil || !ok {
			t.Fatalf("go revive: %v %v", ok, err)
		}
		c, err = r.node.Claim(ctx, protocol.ClaimArgs{Queue: queue, LeaseMS: 30000})
		if err != nil || c == nil || c.ID != e.ID || c.Token != 2 {
			t.Fatalf("node reclaim after go's revive: %+v %v (want token 2)", c, err)
		}
		if err := r.node.Complete(ctx, fence(queue, c.ID, 2)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a node consumer parked on the wake key is woken by a go enqueue", func(t *testing.T) {
		type parked struct {
			res protocol.ParkResult
			err error
		}
		// A woken consumer's jobs come as soon as the enqueues do; without the wake none would
		// (a pop that times out parks again without claiming), so the park's long timeout only
		// bounds a broken port, and how fast the wake is is not this test's to time.
		ch := make(chan parked, 1)
		go func() {
			res, err := r.node.Park(ctx, protocol.ParkArgs{Queue: queue, Consumers: 2, Jobs: 3, LeaseMS: 30000, ParkMS: 3000, TimeoutMS: 60000})
			ch <- parked{res, err}
		}()
		await.Until(t, "both node consumers parked", func() bool { return r.blocked(t) == 2 })
		want := map[string]bool{}
		for i := range 3 {
			e, err := r.gob.Enqueue(ctx, queue, []byte{byte(i)})
			if err != nil {
				t.Fatal(err)
			}
			want[e.ID] = true
		}
		p := <-ch
		if p.err != nil {
			t.Fatalf("node park: %v", p.err)
		}
		if len(p.res.Jobs) != 3 {
			t.Fatalf("node park completed %+v, want the 3 go jobs", p.res.Jobs)
		}
		for _, j := range p.res.Jobs {
			if !want[j.ID] || j.Token != 1 {
				t.Fatalf("node park completed %+v, want each of %v once with token 1", j, want)
			}
			delete(want, j.ID)
		}
	})
	t.Run("a node consumer takes a first look at a go backlog whose wake token is gone", func(t *testing.T) {
		e, err := r.gob.Enqueue(ctx, queue, []byte("no token"))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.raw.Del(ctx, "emq:{"+queue+"}:wake").Err(); err != nil {
			t.Fatal(err)
		}
		// Claiming first finds the job at once; parking first never would (the token is gone), so
		// the long timeout only bounds a broken port.
		p, err := r.node.Park(ctx, protocol.ParkArgs{Queue: queue, Consumers: 1, Jobs: 1, LeaseMS: 30000, ParkMS: 3000, TimeoutMS: 60000})
		if err != nil {
			t.Fatalf("node park: %v", err)
		}
		if len(p.Jobs) != 1 || p.Jobs[0].ID != e.ID {
			t.Fatalf("node park completed %+v, want %s from its first look", p.Jobs, e.ID)
		}
	})
}
