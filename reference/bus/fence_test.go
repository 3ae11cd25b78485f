package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
)

func TestOpenRefusesWrongKindServer(t *testing.T) {
	redis := enginestest.ValkeyWith(t, engines.ValkeyOptions{Kind: engines.KindRedis})
	_, err := bus.Open(ctxT(t), redis.Addr, bus.Options{})
	var e *emqerr.Error
	if !errors.As(err, &e) || e.Type != emqerr.TypeServer {
		t.Fatalf("open on Redis 7 = %v, want *emqerr.Error EMQSERVER", err)
	}
	if n := inspect(t, redis.Addr).int("DBSIZE"); n != 0 {
		t.Fatalf("a refused open wrote %d keys", n)
	}
	// The explicit opt-in admits it, and says so.
	var said []string
	b, err := bus.Open(ctxT(t), redis.Addr, bus.Options{Fence: fence.Options{AllowEngine: true, Logf: func(f string, _ ...any) { said = append(said, f) }}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close() // Redis 7 has no SET IFEQ: the minter cannot release its lease there
	if len(said) == 0 || b.Server().Server != "redis" {
		t.Fatalf("admitted without a log line (%v) or not redis (%+v)", said, b.Server())
	}
}

func TestOpenRefusesAnotherBundle(t *testing.T) {
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Args: []string{"--databases", "1"}})
	in := inspect(t, v.Addr)
	b := openBus(t, v.Addr, bus.Options{})
	if got := string(in.do("HGET", "{emq}:bundle", "digest").Str); got != b.Digest() {
		t.Fatalf("installed digest %q", got)
	}
	in.do("HSET", "{emq}:bundle", "version", "echomq:3.0.0", "digest", strings.Repeat("0", 40))
	_, err := bus.Open(ctxT(t), v.Addr, bus.Options{})
	if !errors.Is(err, emqerr.Version) {
		t.Fatalf("open over another bundle = %v, want EMQVERSION", err)
	}
	// The open bus fences again at reconnect and is refused too.
	if err := b.Reconnect(ctxT(t)); !errors.Is(err, emqerr.Version) {
		t.Fatalf("reconnect over another bundle = %v, want EMQVERSION", err)
	}
}

// A minter that lost its lease (a thief, or an outage that outlived it) is replaced by itself:
// minting goes on under a fresh lease, never below an id minted before.
func TestLostMinterLeasesAgain(t *testing.T) {
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Args: []string{"--databases", "1"}})
	in := inspect(t, v.Addr)
	ctx := ctxT(t)
	b := openBus(t, v.Addr, bus.Options{MinterTTL: 1500 * time.Millisecond}) // renewed every 500 ms: no busy machine lapses it
	last, err := b.Mint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leases := in.scan("{emq}:minter:*")
	if len(leases) != 1 {
		t.Fatalf("minter leases %v", leases)
	}
	in.do("SET", leases[0], "thief", "PX", 60000) // someone else holds the worker id now
	waitFor(t, "a fresh lease", func() bool {
		id, err := b.Mint(ctx)
		if err != nil || id <= last {
			t.Fatalf("mint = %q, %v (last %q): want ids going on, strictly increasing", id, err, last)
		}
		last = id
		return len(in.scan("{emq}:minter:*")) == 2
	})
	// An explicit reconnect keeps the live lease.
	if err := b.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := b.Mint(ctx)
	if err != nil || id <= last {
		t.Fatalf("mint after reconnect = %q, %v (last %q)", id, err, last)
	}
	if n := len(in.scan("{emq}:minter:*")); n != 2 {
		t.Fatalf("%d minter keys, want the thief's and the new lease", n)
	}
}

// A consumer rides through a lost connection (the bus reconnects and fences by itself, Health
// counts it) and stops with a typed refusal when the server comes back with another bundle.
func TestConsumerRidesThroughAndStopsOnRefusal(t *testing.T) {
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Args: []string{"--databases", "1"}})
	in := inspect(t, v.Addr)
	ctx := ctxT(t)
	b := openBus(t, v.Addr, bus.Options{})
	q := qname(t)
	var handled atomic.Int64
	c, err := b.Consumer(q, bus.ConsumerOptions{Concurrency: 2, Lease: bus.Ms(500 * time.Millisecond), Park: 100 * time.Millisecond, Maintain: 100 * time.Millisecond},
		func(context.Context, *bus.Job) error { handled.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	b.Enqueue(ctx, q, []byte("one"))
	waitFor(t, "the first job", func() bool { return handled.Load() == 1 })
	in.do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	waitFor(t, "a job after the kill", func() bool {
		_, err := b.Enqueue(ctx, q, []byte("two")) // fails at once until the bus is back
		return err == nil
	})
	waitFor(t, "the second job", func() bool { return handled.Load() >= 2 })
	if h := c.Health(); h.Reconnects < 1 {
		t.Fatalf("health %+v: want the reconnect counted", h)
	}
	in.do("HSET", "{emq}:bundle", "digest", strings.Repeat("0", 40))
	in.do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	select {
	case err := <-ran:
		if !errors.Is(err, emqerr.Version) {
			t.Fatalf("Run = %v, want EMQVERSION", err)
		}
	case <-time.After(await.Stall): // the redial meets the refusal as soon as the machine lets it
		t.Fatal("Run did not return on the refusal")
	}
	// The main connection may still be redialling when Run returns (its calls fail at once,
	// retriable, meanwhile); once it has met the server, every call gets the typed refusal.
	var last error
	waitFor(t, "enqueue refused with EMQVERSION", func() bool {
		_, last = b.Enqueue(ctx, q, []byte("three"))
		return errors.Is(last, emqerr.Version)
	})
	if _, err := b.Enqueue(ctx, q, []byte("four")); !errors.Is(err, emqerr.Version) {
		t.Fatalf("enqueue after the refusal = %v (before it: %v), want EMQVERSION", err, last)
	}
}
