package mutant

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/keys"
)

// The Go halves of the statement mutants that no seam of the bus builds alone: a port that
// reads an error's message, a consumer pool that parks before it claims, a worker that takes a
// last look with claim_batch before it parks, a cluster router that asks a node for a slot.

// goneDoneFront answers complete's EMQSTALE as a success when its message says the job is gone:
// a port that branches on the message text ("no such job": it must have been completed
// already), the idempotent complete a caller might want, and not the type (canon §4.3).
type goneDoneFront struct{ drivers.Driver }

func (f goneDoneFront) Complete(ctx context.Context, a protocol.FenceArgs) error {
	err := f.Driver.Complete(ctx, a)
	var e *emqerr.Error
	if errors.As(err, &e) && strings.HasSuffix(e.Message, "no such job") {
		return nil
	}
	return err
}

// parkFirstFront is a park whose consumers wait for work before they look for any: each pops
// the queue's wake key first, on a parking line of its own, and the consumers start claiming
// only once a token arrives; a pop that times out parks again. A wake-driven loop written
// "wait, then work" does this: it is right while every enqueue leaves a token, and wrong for a
// backlog whose token a consumer that died before claiming took with it (A10: claim first). A
// standalone defect: in cluster mode the front leaves the park alone.
type parkFirstFront struct {
	drivers.Driver
	mu      sync.Mutex
	addr    string             // the hello's server, standalone only
	stopped bool               // the end of input came
	stop    context.CancelFunc // ends the gate in flight
}

func (f *parkFirstFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	if err == nil && !a.Cluster {
		f.mu.Lock()
		f.addr = a.Valkey
		f.mu.Unlock()
	}
	return h, err
}

func (f *parkFirstFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	f.mu.Lock()
	addr := f.addr
	f.mu.Unlock()
	q, qerr := keys.Queue(a.Queue)
	if addr == "" || qerr != nil || a.Consumers < 1 || a.Jobs < 1 || a.TimeoutMS < 1 || a.ParkMS < 1 {
		return f.Driver.Park(ctx, a) // the port's own answers (refusals, an empty park)
	}
	end := time.Now().Add(time.Duration(a.TimeoutMS) * time.Millisecond)
	gctx, cancel := context.WithDeadline(ctx, end)
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		cancel()
		return protocol.ParkResult{Jobs: []protocol.Parked{}}, nil
	}
	f.stop = cancel
	f.mu.Unlock()
	woken, err := f.gate(gctx, addr, q.Wake(), a.Consumers, time.Duration(a.ParkMS)*time.Millisecond)
	ended := gctx.Err() != nil // timeout_ms passed, or the input ended
	cancel()
	f.mu.Lock()
	f.stop = nil
	f.mu.Unlock()
	switch {
	case err != nil && ctx.Err() != nil:
		return protocol.ParkResult{}, ctx.Err()
	case err != nil && !ended:
		return protocol.ParkResult{}, err
	case !woken:
		// timeout_ms passed (or the input ended) with the consumers still waiting for a wake.
		return protocol.ParkResult{Jobs: []protocol.Parked{}}, nil
	}
	a.TimeoutMS = max(time.Until(end).Milliseconds(), 1)
	return f.Driver.Park(ctx, a)
}

// gate parks each of n consumers on a fenced connection of its own (HELLO 2 and the fence
// first, as every parking line), each popping wake until a token arrives: the first token
// starts the pool (true); the other lines are closed. False when ctx ends first.
func (f *parkFirstFront) gate(ctx context.Context, addr, wake string, n int, park time.Duration) (bool, error) {
	b, err := lua.Load()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type popped struct {
		woken bool
		err   error
	}
	out := make(chan popped, n)
	for range n {
		go func() {
			woken, err := popUntilWoken(ctx, addr, b, wake, park)
			out <- popped{woken, err}
		}()
	}
	var first error
	for range n {
		p := <-out
		if p.woken {
			return true, nil // the deferred cancel ends the other pops, which close their lines
		}
		if first == nil && p.err != nil {
			first = p.err
			cancel()
		}
	}
	return false, cmp.Or(first, ctx.Err())
}

// popUntilWoken dials one parking line and pops wake on it until a token arrives (true) or ctx
// ends; a pop that times out parks again.
func popUntilWoken(ctx context.Context, addr string, b *lua.Bundle, wake string, park time.Duration) (bool, error) {
	c, err := fence.Dial(ctx, addr, b, fence.Options{}, connector.Options{})
	if err != nil {
		return false, err
	}
	defer c.Close() // a cancelled pop is still in flight on the server: close its line
	for ctx.Err() == nil {
		v, err := c.DoBlocking(ctx, park, "BLPOP", wake, strconv.FormatFloat(park.Seconds(), 'f', 3, 64))
		if err != nil {
			return false, err
		}
		if !v.Null {
			return true, nil
		}
	}
	return false, ctx.Err()
}

// EndInput ends a gate in flight (the park answers at once, as the port's does), then the
// session as the port ends it.
func (f *parkFirstFront) EndInput(ctx context.Context, until time.Time) error {
	f.mu.Lock()
	f.stopped = true
	if f.stop != nil {
		f.stop()
	}
	f.mu.Unlock()
	if e, ok := f.Driver.(drivers.InputEnder); ok {
		return e.EndInput(ctx, until)
	}
	return f.Driver.Close(ctx)
}

// batchLook is a worker that, having found its queue empty, takes one last look with
// claim_batch before it parks, for work that came in between its claim and its pop: a claim no
// wake asked for, once per park (not after a pop that timed out, so its idle windows hold
// nothing but pops). The look goes through the parking session's claim_batch (the main
// connection), so its parking lines stay clean; a job it happens to take is left to its lease.
// A port that counts only the single-job claims as claims would take such a batch for free; a
// claiming batch counts as a claim for the no-polling bound (A17).
type batchLook struct {
	mu     sync.Mutex
	d      drivers.Batcher // the session whose park runs
	queue  string
	lease  int64
	looked map[*connector.Conn]bool // parking lines whose worker looked before its pops
	lost   int                      // lines whose pop failed, not yet replaced
}

// claimBatchLook installs the look before every park (bus.Seams.Park) and a front that tells
// it which session parks.
func claimBatchLook(opt *bus.Options) Wrap {
	l := &batchLook{looked: map[*connector.Conn]bool{}}
	opt.Test.Park = l.pop
	return func(d drivers.Driver) drivers.Driver { return &lookFront{Driver: d, l: l} }
}

type lookFront struct {
	drivers.Driver
	l *batchLook
}

func (f *lookFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	if b, ok := f.Driver.(drivers.Batcher); ok {
		f.l.mu.Lock()
		f.l.d, f.l.queue, f.l.lease = b, a.Queue, a.LeaseMS
		f.l.mu.Unlock()
	}
	return f.Driver.Park(ctx, a)
}

// pop is the canon's blocking pop, after the look when the worker comes to park (its line's
// first pop, or its first since a wake).
func (l *batchLook) pop(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	l.mu.Lock()
	entry, d, queue, lease := !l.looked[c], l.d, l.queue, l.lease
	if entry && l.lost > 0 {
		// A line dialled in place of one lost: the worker parks again after the loss, it
		// does not come to park from an empty claim.
		l.lost--
		entry = false
	}
	l.looked[c] = true
	l.mu.Unlock()
	if entry && d != nil && lease >= 1 {
		if r, err := d.ClaimBatch(ctx, protocol.ClaimBatchArgs{Queue: queue, LeaseMS: lease, N: 1}); err == nil && len(r.Jobs) > 0 {
			l.forget(c)
			return true, nil // work came in: claim again without parking
		}
	}
	v, err := c.DoBlocking(ctx, timeout, cmd...)
	woken := err == nil && !v.Null
	if woken || err != nil {
		l.forget(c) // the worker claims, and looks again before its next park
	}
	if err != nil && ctx.Err() == nil {
		l.mu.Lock()
		l.lost++
		l.mu.Unlock()
	}
	return woken, err
}

func (l *batchLook) forget(c *connector.Conn) {
	l.mu.Lock()
	delete(l.looked, c)
	l.mu.Unlock()
}

// keyslotFront is a cluster router that asks a node where the deployment keys live: after a
// cluster-mode hello it sends CLUSTER KEYSLOT {emq}:bundle to the seed (HELLO 2 first) instead
// of hashing the tag itself. A read of the cluster, but not of the slot map: A4 lets a port
// read the map (CLUSTER SHARDS, SLOTS, NODES, INFO, MYID) and nothing else of CLUSTER.
type keyslotFront struct{ drivers.Driver }

func (f keyslotFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	if err != nil || !a.Cluster {
		return h, err
	}
	c, derr := connector.Dial(ctx, a.Valkey, connector.Options{})
	if derr != nil {
		return h, nil
	}
	defer c.Close()
	_, _ = c.Do(ctx, "CLUSTER", "KEYSLOT", keys.Bundle())
	return h, nil
}
