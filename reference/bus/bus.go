// Package bus is the reference EchoMQ bus a Go service uses: it enqueues, claims and settles
// jobs through the bundle's scripts (one EVALSHA per transition), and runs consumers that park
// on the queue's wake key when idle. Every connection it opens runs the fence first.
//
// A bus does a few things:
//
//   - connect: Open (one server) or OpenCluster, then Close; Reconnect on demand;
//   - produce: Enqueue (or Send a Message), EnqueueBatch;
//   - take: Claim, LaneClaim (the lanes' ring), ClaimBatch — or a Consumer, which claims, runs
//     a Handler and settles for it, parking when idle;
//   - settle a claimed job, fenced by its id and token: Complete, Retry, Fail, Extend,
//     Checkpoint, CompleteBatch (the same on a *Job, which knows its own);
//   - recover what time and failure leave: Promote (due jobs), Reap (expired leases), and the
//     morgue (Morgue, Revive, Purge);
//   - hold back: Pause and Resume a queue, LanePause, LaneResume and LaneCeiling a lane;
//   - name: Mint a JOB id, Key a key of the grammar.
//
// A lease or a delay is a Millis, whole milliseconds up to A16's 1e14 (beyond a time.Duration);
// Ms converts a time.Duration.
package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// Options configure a Bus. The zero value is the canon's behaviour.
type Options struct {
	// DialTimeout bounds each connect (dial, HELLO 2, the fence); 5s when zero.
	DialTimeout time.Duration
	// HealthTimeout and HealthInterval tune the connections' health checks
	// (connector.Options): a PING on a suspect or silent connection must be answered within
	// HealthTimeout (2s when zero), and a connection silent for HealthInterval (4s when zero)
	// is checked. A connection that fails its check is replaced.
	HealthTimeout, HealthInterval time.Duration
	// RedialMax caps the pause between the main connection's reconnection attempts, which
	// start at 10ms and double (connector.Options); 1s when zero.
	RedialMax time.Duration
	// MinterTTL is the worker-id lease of the id minter; ids.DefaultTTL when zero.
	MinterTTL time.Duration
	// Minter is the base of the minter's options (its clock, for the port protocol's clock op);
	// MinterTTL, when set, overrides its TTL.
	Minter ids.Options
	// Fence tunes the handshake (e.g. an explicit, logged AllowEngine).
	Fence fence.Options
	// Tap receives a copy of every byte the bus's main connection writes (standalone only).
	Tap io.Writer
	// Rewrite, when set, edits a script's source before use, the fence's included (the kit's
	// tests run edited scripts through it); the fence still presents the canonical bundle.
	Rewrite func(name, source string) string
	// BatchEnqueue coalesces concurrent Enqueue/Send calls on one queue (no lane): what queues
	// up while an enqueue call is in flight goes as one enqueue_batch. A lone call is still
	// one enqueue. Off by default: the port ops send one enqueue each.
	BatchEnqueue bool
	// Test holds the seams the kit's tests swap parts of the bus at (internal/mutant builds its
	// catalogue from them). The zero value is the canon's bus; production code leaves it alone.
	Test Seams
}

// Seams are the bus's injectable dependencies. Each nil field takes the canon's own.
type Seams struct {
	// Hook sees, and may rewrite, every command any connection of the bus sends.
	Hook connector.Hook
	// Handshake builds the OnConnect of one connection the bus opens (called once per
	// connection); fence.OnConnect (the server check, then the bundle fence) when nil.
	// Standalone only: a cluster's node connections run the router's handshake.
	Handshake func(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error
	// Minter leases the bus's id minter through l; ids.NewMinter when nil.
	Minter func(ctx context.Context, l ids.Leaser, opt ids.Options) (Minter, error)
	// Park is one blocking pop of an idle worker on its parking connection: it reports whether
	// a wake token arrived. A BLPOP of cmd with the given server-side timeout when nil.
	Park func(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (woken bool, err error)
}

// Bus is a connection to one Valkey deployment: a standalone server, or a cluster's primaries.
// Safe for concurrent use: concurrent callers share the main connection's implicit pipeline
// (one per primary in a cluster).
type Bus struct {
	addr     string
	opt      Options
	canon    *lua.Bundle
	scripts  scripts
	link     link
	router   *cluster.Router // nil for a standalone server
	mint     atomic.Pointer[minterBox]
	lastMu   sync.Mutex
	last     string     // the greatest id minted: a replacement minter starts above it
	remintMu sync.Mutex // one minter replacement at a time
	queues   sync.Map   // queue name → *qkeys
	up       upSignal   // ended each time a connection found lost is replaced
	closed   atomic.Bool
	done     chan struct{}  // closed by Close: the enqueue batchers stop
	loops    sync.WaitGroup // the enqueue batchers
}

// errBusClosed is what a call gets after Close.
var errBusClosed = errors.New("bus: closed")

// Minter is what the bus needs of an id minter (*ids.Minter is one).
type Minter interface {
	Next(ctx context.Context) (string, error)
	Close() error
}

type minterBox struct{ m Minter }

// Open dials addr with the fence as the connection's OnConnect, and leases an id minter.
func Open(ctx context.Context, addr string, opt Options) (*Bus, error) {
	canon, err := lua.Load()
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 5 * time.Second
	}
	b := &Bus{addr: addr, opt: opt, canon: canon, done: make(chan struct{})}
	if b.scripts, err = loadScripts(canon, opt.Rewrite); err != nil {
		return nil, err
	}
	copt := b.connOptions()
	copt.Tap = opt.Tap
	// The main connection reconnects by itself after any loss: HELLO 2 and the fence run
	// again first on every new socket; calls meanwhile fail at once, retriable.
	copt.Redial, copt.RedialMax = true, b.opt.RedialMax
	copt.OnRedial = func(err error) {
		if err == nil {
			b.up.fire() // parking lines dialled before the loss may be dead as well
		}
	}
	conn, err := connector.Dial(ctx, addr, copt)
	if err != nil {
		return nil, fmt.Errorf("bus: open %s: %w", addr, fence.Classify(err))
	}
	// A pointer: the link is also the minter's leaser, and a leaser is compared by identity.
	b.link = &standalone{Conn: conn, addr: addr, opts: b.lineOptions}
	return b.start(ctx)
}

// OpenCluster opens the bus on a Valkey Cluster, given one or more of its nodes: the slot map
// comes from CLUSTER SHARDS, every primary gets one fenced, pipelined connection (HELLO 2, the
// cluster-mode engine check, the bundle fence) and the bundle, and every call goes to the owner
// of its queue's slot (reference/cluster), following MOVED and ASK. The minter's lease lives on
// the {emq} slot's owner. Every op and the consumer work as with Open; a consumer parks on its
// queue's wake key at the primary owning it. The Tap and the Handshake seam are standalone only.
func OpenCluster(ctx context.Context, seeds []string, opt Options) (*Bus, error) {
	if opt.Tap != nil || opt.Test.Handshake != nil {
		return nil, fmt.Errorf("bus: open cluster: %w", argErr("Tap and the Handshake seam are for a standalone server"))
	}
	canon, err := lua.Load()
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 5 * time.Second
	}
	addr := ""
	if len(seeds) > 0 {
		addr = seeds[0]
	}
	b := &Bus{addr: addr, opt: opt, canon: canon, done: make(chan struct{})}
	if b.scripts, err = loadScripts(canon, opt.Rewrite); err != nil {
		return nil, err
	}
	r, err := cluster.Dial(ctx, seeds, cluster.Options{DialTimeout: opt.DialTimeout, Fence: b.fenceOptions(), Hook: opt.Test.Hook,
		HealthTimeout: opt.HealthTimeout, HealthInterval: opt.HealthInterval, OnReconnect: func(string) { b.up.fire() }})
	if err != nil {
		return nil, fmt.Errorf("bus: open cluster %v: %w", seeds, err)
	}
	b.link, b.router = r, r
	return b.start(ctx)
}

// start leases the id minter over the bus's link, which it closes on failure.
func (b *Bus) start(ctx context.Context) (*Bus, error) {
	m, err := b.newMinter(ctx, 0)
	if err != nil {
		b.link.Close()
		return nil, err
	}
	b.mint.Store(&minterBox{m})
	return b, nil
}

// Router is the cluster router of a bus opened with OpenCluster (its slot map and redirect
// counters), nil for a standalone server.
func (b *Bus) Router() *cluster.Router { return b.router }

// fenceOptions are the fence's options with Rewrite applied to its script, on a standalone
// server and on every primary of a cluster alike.
func (b *Bus) fenceOptions() fence.Options {
	opt := b.opt.Fence
	if ls, ok := b.canon.Script(lua.Fence); ok && b.opt.Rewrite != nil && opt.Source == "" {
		if src := b.opt.Rewrite(lua.Fence, ls.Source); src != ls.Source {
			opt.Source = src
		}
	}
	return opt
}

// handshake is a fresh OnConnect for one connection the bus opens.
func (b *Bus) handshake() func(context.Context, *connector.Conn) error {
	opt := b.fenceOptions()
	if h := b.opt.Test.Handshake; h != nil {
		return h(b.canon, opt)
	}
	return fence.OnConnect(b.canon, opt)
}

func (b *Bus) connOptions() connector.Options {
	return connector.Options{DialTimeout: b.opt.DialTimeout, OnConnect: b.handshake(), Hook: b.opt.Test.Hook,
		HealthTimeout: b.opt.HealthTimeout, HealthInterval: b.opt.HealthInterval}
}

// lineOptions are a parking line's: fresh for each, no Tap, no redial, and no periodic health
// check, which would put a PING among its pops (A10): its blocking pop's read deadline (the
// pop's timeout plus the connector's BlockSlack) is its check.
func (b *Bus) lineOptions() connector.Options {
	o := b.connOptions()
	o.HealthInterval = -1
	return o
}

// upSignal is a context ended, and renewed, each time one of the bus's connections that was
// found lost has been replaced. Waiters take the current one before they call, so a reconnect
// that happens meanwhile is not missed.
type upSignal struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// current is the context the next reconnect ends.
func (u *upSignal) current() context.Context {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ctx == nil {
		u.ctx, u.cancel = context.WithCancel(context.Background())
	}
	return u.ctx
}

func (u *upSignal) fire() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cancel != nil {
		u.cancel()
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
}

// Addr is the server address (the first seed of a cluster).
func (b *Bus) Addr() string { return b.addr }

// Digest is the canonical bundle digest the fence presents.
func (b *Bus) Digest() string { return b.canon.Digest() }

// Server is what the server's HELLO 2 said at the last (re)connect.
func (b *Bus) Server() connector.ServerInfo { return b.link.Server() }

// Reconnect replaces the main connection's socket; the handshake runs again first. A minter
// that lost its lease is replaced by a freshly leased one that mints above every id so far.
// The bus also reconnects by itself after a connection loss; this forces it.
func (b *Bus) Reconnect(ctx context.Context) error {
	if err := b.link.Reconnect(ctx); err != nil {
		return fmt.Errorf("bus: reconnect: %w", fence.Classify(err))
	}
	old := b.mint.Load()
	// The lease may have been lost while the connection was down: renew it on the server now
	// (A9); a minter that cannot renew is asked for an id instead.
	if r, ok := old.m.(interface{ Reaffirm(context.Context) error }); ok {
		if err := r.Reaffirm(ctx); err == nil {
			return nil // the lease holds
		}
	} else if _, err := old.m.Next(ctx); err == nil {
		return nil // the lease holds
	}
	if err := b.remint(ctx, old); err != nil {
		return fmt.Errorf("bus: reconnect: %w", err)
	}
	return nil
}

// Reconnects counts the main connection's sockets that replaced a lost one.
func (b *Bus) Reconnects() int64 { return b.link.Reconnects() }

// remint replaces the minter old (its lease lost, e.g. across a server restart) by a freshly
// leased one that mints above every id minted so far. Concurrent callers replace it once.
func (b *Bus) remint(ctx context.Context, old *minterBox) error {
	b.remintMu.Lock()
	defer b.remintMu.Unlock()
	if b.mint.Load() != old {
		return nil // replaced meanwhile
	}
	b.lastMu.Lock()
	last := b.last
	b.lastMu.Unlock()
	var after uint64
	if last != "" {
		var err error
		if after, err = ids.ParseJob(last); err != nil {
			return fmt.Errorf("bus: the last id minted %q: %w", last, err)
		}
	}
	m, err := b.newMinter(ctx, after)
	if err != nil {
		return err
	}
	b.mint.Store(&minterBox{m})
	old.m.Close() // its lease is gone already; releasing is best effort
	return nil
}

// Close releases the minter lease and closes the connection. Idempotent.
func (b *Bus) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	close(b.done)
	b.loops.Wait()
	b.queues.Range(func(_, v any) bool {
		e := &v.(*qkeys).enq
		e.once.Do(func() {}) // a batcher not started by now never starts
		if e.b != nil {
			e.b.close() // waits for the enqueues its callers send themselves
		}
		return true
	})
	err := b.mint.Load().m.Close()
	if errors.Is(err, connector.ErrConnLost) || errors.Is(err, connector.ErrRefused) {
		err = nil // no server to release it on: the lease lapses by its TTL
	}
	return errors.Join(err, b.link.Close())
}

// typed wraps err with what the bus was doing; a canon error reply stays reachable with
// errors.Is / errors.As as an *emqerr.Error (resp.ServerError.As). A connection the server's
// HELLO refused is EMQSERVER (fence.Classify): the main connection's own redial meets that
// refusal too, not only a dial.
func typed(op string, err error) error {
	return fmt.Errorf("bus: %s: %w", op, fence.Classify(err))
}

// scripts are the bus's runnable scripts, one field per bundle script.
type scripts struct {
	enqueue, claim, complete, retry, fail, reap, promote, extend, checkpoint,
	revive, purge, pause, resume, laneEnqueue, laneClaim, lanePause, laneResume,
	laneCeiling, enqueueBatch, claimBatch, completeBatch *connector.Script
}

func loadScripts(b *lua.Bundle, rewrite func(name, src string) string) (scripts, error) {
	var s scripts
	for _, f := range []struct {
		name string
		dst  **connector.Script
	}{
		{lua.Enqueue, &s.enqueue}, {lua.Claim, &s.claim}, {lua.Complete, &s.complete},
		{lua.Retry, &s.retry}, {lua.Fail, &s.fail}, {lua.Reap, &s.reap},
		{lua.Promote, &s.promote}, {lua.Extend, &s.extend}, {lua.Checkpoint, &s.checkpoint},
		{lua.Revive, &s.revive}, {lua.Purge, &s.purge}, {lua.Pause, &s.pause},
		{lua.Resume, &s.resume}, {lua.LaneEnqueue, &s.laneEnqueue},
		{lua.LaneClaim, &s.laneClaim}, {lua.LanePause, &s.lanePause},
		{lua.LaneResume, &s.laneResume}, {lua.LaneCeiling, &s.laneCeiling},
		{lua.EnqueueBatch, &s.enqueueBatch}, {lua.ClaimBatch, &s.claimBatch},
		{lua.CompleteBatch, &s.completeBatch},
	} {
		ls, ok := b.Script(f.name)
		if !ok {
			return s, fmt.Errorf("bus: the bundle has no %s script", f.name)
		}
		src := ls.Source
		if rewrite != nil {
			src = rewrite(f.name, src)
		}
		*f.dst = connector.NewScript(f.name, src)
	}
	return s, nil
}

// leaser implements ids.Leaser with loose commands on the braced deployment key (A4/A9).
type leaser struct{ l link }

func (l leaser) set(ctx context.Context, worker int, args ...any) (bool, error) {
	k, err := keys.Minter(worker)
	if err != nil {
		return false, err
	}
	v, err := l.l.Do(ctx, k, append([]any{"SET", k}, args...)...)
	if err != nil {
		return false, err
	}
	return !v.Null, nil
}

func (l leaser) Acquire(ctx context.Context, worker int, owner string, ttl time.Duration) (bool, error) {
	return l.set(ctx, worker, owner, "NX", "PX", ttl.Milliseconds())
}

// Renew uses Valkey 8.1's SET … IFEQ, so only the owner extends the lease.
func (l leaser) Renew(ctx context.Context, worker int, owner string, ttl time.Duration) (bool, error) {
	return l.set(ctx, worker, owner, "IFEQ", owner, "PX", ttl.Milliseconds())
}

// Release lets the lease lapse within a millisecond, and only if we still own it.
func (l leaser) Release(ctx context.Context, worker int, owner string) error {
	_, err := l.set(ctx, worker, owner, "IFEQ", owner, "PX", 1)
	return err
}

// newMinter leases a minter whose ids stay above after (zero: a first lease).
func (b *Bus) newMinter(ctx context.Context, after uint64) (Minter, error) {
	opt := b.opt.Minter
	opt.After = after
	if b.opt.MinterTTL != 0 {
		opt.TTL = b.opt.MinterTTL
	}
	var m Minter
	var err error
	if f := b.opt.Test.Minter; f != nil {
		m, err = f(ctx, leaser{b.link}, opt)
	} else {
		m, err = ids.NewMinter(ctx, leaser{b.link}, opt)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: minter: %w", err)
	}
	return m, nil
}

// Mint mints a JOB id from the bus's leased minter.
func (b *Bus) Mint(ctx context.Context) (string, error) {
	box := b.mint.Load()
	id, err := box.m.Next(ctx)
	if errors.Is(err, ids.ErrLeaseLost) && !b.closed.Load() {
		// The lease lapsed (an outage outlived it): lease again, above every id so far.
		if err = b.remint(ctx, box); err == nil {
			id, err = b.mint.Load().m.Next(ctx)
		}
	}
	if err != nil {
		return "", fmt.Errorf("bus: mint: %w", err)
	}
	b.lastMu.Lock()
	if id > b.last {
		b.last = id
	}
	b.lastMu.Unlock()
	return id, nil
}

func argErr(format string, a ...any) *emqerr.Error {
	return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf(format, a...)}
}
