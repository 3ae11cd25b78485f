package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
)

// A16's durations reach 1e14 ms; a time.Duration ends near 9.22e12 ms. Through the *MS entry
// points the bus stores the whole range exactly: the active and scheduled scores are the
// server's TIME plus the very number asked for (1e14 + TIME < 2^53, exact as a score).
func TestA16DurationsStoredExactly(t *testing.T) {
	ctx := ctxT(t)
	b := openBus(t, addr, bus.Options{})
	in := inspect(t, addr)
	q := qname(t)
	k := "emq:{" + q + "}:"
	for _, ms := range []int64{9_300_000_000_000, bus.MaxMS} { // past a Duration, and the top
		e, err := b.Send(ctx, q, bus.Message{Payload: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		before := in.now()
		j, err := b.Claim(ctx, q, bus.Millis(ms))
		if err != nil || j == nil || j.ID != e.ID {
			t.Fatalf("claim %d ms: %v %v", ms, j, err)
		}
		after := in.now()
		if got := in.score(k+"active", j.ID); got < before+ms || got > after+ms {
			t.Fatalf("claim with lease_ms %d: active score %d, want TIME + %d in [%d, %d]", ms, got, ms, before+ms, after+ms)
		}
		before = in.now()
		dl, err := b.Extend(ctx, q, j.ID, j.Token, bus.Millis(ms))
		if err != nil || dl < before+ms || dl > in.now()+ms || in.score(k+"active", j.ID) != dl {
			t.Fatalf("extend %d ms: deadline %d (%v), active %d", ms, dl, err, in.score(k+"active", j.ID))
		}
		before = in.now()
		if dead, err := b.Retry(ctx, q, j.ID, j.Token, 10, bus.Millis(ms), "again"); err != nil || dead {
			t.Fatalf("retry %d ms: %v %v", ms, dead, err)
		}
		if got := in.score(k+"scheduled", j.ID); got < before+ms || got > in.now()+ms {
			t.Fatalf("retry with delay_ms %d: scheduled score %d, want TIME + %d", ms, got, ms)
		}
		before = in.now()
		d, err := b.Send(ctx, q, bus.Message{Payload: []byte("later"), Delay: bus.Millis(ms)})
		if err != nil {
			t.Fatal(err)
		}
		if got := in.score(k+"scheduled", d.ID); got < before+ms || got > in.now()+ms {
			t.Fatalf("enqueue with delay_ms %d: scheduled score %d, want TIME + %d", ms, got, ms)
		}
	}
	// Out of range: EMQARG before anything is sent.
	for name, err := range map[string]error{
		"lease 0":        func() error { _, err := b.Claim(ctx, q, 0); return err }(),
		"lease 1e14+1":   func() error { _, err := b.Claim(ctx, q, bus.MaxMS+1); return err }(),
		"extend 1e14+1":  func() error { _, err := b.Extend(ctx, q, "JOB0000000000A", 1, bus.MaxMS+1); return err }(),
		"retry -1":       func() error { _, err := b.Retry(ctx, q, "JOB0000000000A", 1, 1, -1, "e"); return err }(),
		"delay 1e14+1":   func() error { _, err := b.Send(ctx, q, bus.Message{Delay: bus.MaxMS + 1}); return err }(),
		"consumer lease": func() error { _, err := b.Consumer(q, bus.ConsumerOptions{Lease: bus.MaxMS + 1}, nop); return err }(),
	} {
		mustTypeNamed(t, name, err, emqerr.Arg)
	}
}

// A consumer whose Lease is past a time.Duration claims with exactly that lease.
func TestConsumerLeaseExact(t *testing.T) {
	ctx := ctxT(t)
	b := openBus(t, addr, bus.Options{})
	in := inspect(t, addr)
	q := qname(t)
	if _, err := b.Send(ctx, q, bus.Message{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	got := make(chan int64, 1)
	before := in.now()
	c, err := b.Consumer(q, bus.ConsumerOptions{Lease: bus.MaxMS, Maintain: -1}, func(ctx context.Context, j *bus.Job) error {
		got <- in.score("emq:{"+q+"}:active", j.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	score := <-got
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if score < before+bus.MaxMS || score > in.now()+bus.MaxMS {
		t.Fatalf("consumer with Lease 1e14: active score %d, want TIME + 1e14", score)
	}
}

func nop(context.Context, *bus.Job) error { return nil }

func mustTypeNamed(t *testing.T, name string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", name, err, target)
	}
}
