package inproc_test

import (
	"context"
	"encoding/base64"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
)

func session(t *testing.T, addr string, opt inproc.Options) (context.Context, drivers.Driver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	f, err := inproc.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	h, err := d.Hello(ctx, protocol.HelloArgs{Valkey: addr})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := lua.Load()
	if h.Bundle != lua.Version || h.Digest != b.Digest() || len(h.Claims) != 14 {
		t.Fatalf("hello %+v", h)
	}
	return ctx, d
}

func TestDriverJobLife(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	ctx, d := session(t, addr, inproc.Options{})
	m, err := d.Mint(ctx, protocol.MintArgs{N: 200, Parallel: 4})
	if err != nil || len(m.IDs) != 4 {
		t.Fatal(m, err)
	}
	all := map[string]bool{}
	for _, l := range m.IDs {
		if len(l) != 200 || !sort.StringsAreSorted(l) {
			t.Fatal("a caller's ids are not in mint order")
		}
		for _, id := range l {
			all[id] = true
		}
	}
	if len(all) != 800 {
		t.Fatalf("%d distinct ids of 800", len(all))
	}
	if _, err := d.Key(ctx, protocol.KeyArgs{Queue: "orders", Type: "job", ID: "ORD0KHTOWnGLuC"}); !errors.Is(err, emqerr.Kind) {
		t.Fatalf("key of a wrong-brand id: %v", err)
	}
	if s, _ := d.Slot(ctx, protocol.SlotArgs{Key: "emq:{orders}:pending"}); s.Slot != 105 {
		t.Fatalf("slot %d", s.Slot)
	}
	e, err := d.Enqueue(ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: base64.StdEncoding.EncodeToString([]byte("hi"))})
	if err != nil || !e.Created {
		t.Fatal(e, err)
	}
	if _, err := d.Enqueue(ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: "%%%"}); !errors.Is(err, emqerr.Arg) {
		t.Fatalf("bad base64: %v", err)
	}
	c, err := d.Claim(ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: 5000})
	if err != nil || c == nil || c.ID != e.ID || c.Token != 1 || c.PayloadB64 != "aGk=" || c.CheckpointB64 != nil {
		t.Fatalf("claim %+v, %v", c, err)
	}
	if err := d.Checkpoint(ctx, protocol.CheckpointArgs{FenceArgs: protocol.FenceArgs{Queue: "orders", ID: c.ID, Token: 1}, DataB64: "c3RlcA=="}); err != nil {
		t.Fatal(err)
	}
	r, err := d.Retry(ctx, protocol.RetryArgs{FenceArgs: protocol.FenceArgs{Queue: "orders", ID: c.ID, Token: 1}, MaxAttempts: 5, Error: "x"})
	if err != nil || r.Outcome != "retried" {
		t.Fatal(r, err)
	}
	if err := d.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	c, _ = d.Claim(ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: 5000})
	if c == nil || c.Token != 2 || c.CheckpointB64 == nil || *c.CheckpointB64 != "c3RlcA==" {
		t.Fatalf("redelivery %+v", c)
	}
	if err := d.Complete(ctx, protocol.FenceArgs{Queue: "orders", ID: c.ID, Token: 1}); !errors.Is(err, emqerr.Stale) {
		t.Fatalf("stale complete: %v", err)
	}
	if err := d.Complete(ctx, protocol.FenceArgs{Queue: "orders", ID: c.ID, Token: 2}); err != nil {
		t.Fatal(err)
	}
}

func TestDriverPark(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	ctx, d := session(t, addr, inproc.Options{})
	type result struct {
		r   protocol.ParkResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The park returns at its third job; its timeout only bounds a broken port.
		r, err := d.Park(ctx, protocol.ParkArgs{Queue: "p", Consumers: 2, Jobs: 3, LeaseMS: 5000, ParkMS: 1000, TimeoutMS: 60000})
		done <- result{r, err}
	}()
	// The kit enqueues from its own connection while the port is parked.
	kit, err := connector.Dial(ctx, addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()
	b, _ := lua.Load()
	enq := connector.NewScript("enqueue", b.MustScript(lua.Enqueue).Source)
	time.Sleep(50 * time.Millisecond)
	ids := []string{"JOB00000000001", "JOB00000000002", "JOB00000000003"}
	for _, id := range ids {
		if _, err := kit.EvalSha(ctx, enq, []string{"emq:{p}:job:" + id, "emq:{p}:pending", "emq:{p}:scheduled", "emq:{p}:wake"}, id, "x", 0); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil || len(r.r.Jobs) != 3 {
		t.Fatalf("park = %+v, %v", r.r, r.err)
	}
	for _, j := range r.r.Jobs {
		if j.Token != 1 || j.Consumer < 0 || j.Consumer > 1 {
			t.Fatalf("parked job %+v", j)
		}
	}
	// Timeout with no work: an empty list, no error.
	r2, err := d.Park(ctx, protocol.ParkArgs{Queue: "p", Consumers: 1, Jobs: 1, LeaseMS: 5000, ParkMS: 100, TimeoutMS: 150})
	if err != nil || len(r2.Jobs) != 0 {
		t.Fatalf("idle park = %+v, %v", r2, err)
	}
}
