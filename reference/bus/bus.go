// Package bus is the reference EchoMQ bus a Go service uses: it enqueues, claims and settles
// jobs through the bundle's scripts (one EVALSHA per transition), and runs consumers that park
// on the queue's wake key when idle. Every connection it opens runs the fence first.
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
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// Options configure a Bus. The zero value is the canon's behaviour.
type Options struct {
	// DialTimeout bounds each TCP dial; 5s when zero.
	DialTimeout time.Duration
	// MinterTTL is the worker-id lease of the id minter; ids.DefaultTTL when zero.
	MinterTTL time.Duration
	// Minter is the base of the minter's options (its clock, for the port protocol's clock op;
	// its defects, for the mutant catalogue); MinterTTL, when set, overrides its TTL.
	Minter ids.Options
	// Fence tunes the handshake (e.g. an explicit, logged AllowEngine).
	Fence fence.Options
	// Tap receives a copy of every byte the bus's main connection writes.
	Tap io.Writer
	// Rewrite, when set, edits a script's source before use. It exists for the mutant
	// catalogue (reference/mutant); the fence still presents the canonical bundle.
	Rewrite func(name, source string) string
	// Defects switches on deliberate Go-side defects, for the mutant catalogue only.
	Defects Defects
	// GroupEnqueue coalesces concurrent Enqueue/Send calls on one queue (no lane) by group
	// commit: what queues up while an enqueue call is in flight goes as one enqueue_batch.
	// A lone call is still one enqueue. Off by default: the port ops send one enqueue each.
	GroupEnqueue bool
}

// Defects are deliberate deviations from the canon, each one a mutant of the reference port
// (reference/mutant). The zero value is correct behaviour.
type Defects struct {
	EvalEnqueue      bool // enqueue sends EVAL of an edited source instead of EVALSHA
	ClientClockLease bool // claim sends an instant (client now + lease) instead of lease_ms
	ArgvRowPrefix    bool // enqueue passes the row-key prefix in ARGV for the script to build from
	PollPark         bool // an idle consumer polls claim instead of blocking on the wake key
	RepeatIDs        bool // the minter restarts its sequence every call: repeats within a ms
	FenceLate        bool // the minter lease is taken before the fence runs
	NoRefence        bool // the fence runs at the first connect only, not after a reconnect
	LaxQueueNames    bool // the key builder sends any queue or lane name
	LaxIDBrand       bool // the key builder accepts a well-formed id of another brand
}

// Bus is a connection to one Valkey deployment. Safe for concurrent use: concurrent callers
// share the main connection's implicit pipeline.
type Bus struct {
	addr    string
	opt     Options
	canon   *lua.Bundle
	scripts scripts
	conn    *connector.Conn
	mint    atomic.Pointer[minterBox]
	lastMu  sync.Mutex
	last    string   // the greatest id minted: a replacement minter starts above it
	queues  sync.Map // queue name → *qkeys
	closed  atomic.Bool
}

// minter is what the bus needs of ids.Minter (and of the repeating defect).
type minter interface {
	Next(ctx context.Context) (string, error)
	Close() error
}

type minterBox struct{ m minter }

// Open dials addr with the fence as the connection's OnConnect, and leases an id minter.
func Open(ctx context.Context, addr string, opt Options) (*Bus, error) {
	canon, err := lua.Load()
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = 5 * time.Second
	}
	b := &Bus{addr: addr, opt: opt, canon: canon}
	if b.scripts, err = loadScripts(canon, opt.Rewrite); err != nil {
		return nil, err
	}
	copt := b.connOptions()
	copt.Tap = opt.Tap
	if opt.Defects.FenceLate {
		// Defect: at the first connect the server check only; the fence waits until the
		// minter is leased. Reconnects fence as they should.
		var first atomic.Bool
		first.Store(true)
		full := copt.OnConnect
		copt.OnConnect = func(ctx context.Context, c *connector.Conn) error {
			if first.Swap(false) {
				return fence.Check(c.Server(), opt.Fence)
			}
			return full(ctx, c)
		}
	}
	conn, err := connector.Dial(ctx, addr, copt)
	if err != nil {
		return nil, fmt.Errorf("bus: open %s: %w", addr, fence.Classify(err))
	}
	b.conn = conn
	m, err := b.newMinter(ctx)
	if err != nil {
		conn.Close()
		return nil, err
	}
	b.mint.Store(&minterBox{m})
	if opt.Defects.FenceLate {
		if _, err := fence.Run(ctx, conn, canon); err != nil {
			m.Close()
			conn.Close()
			return nil, fmt.Errorf("bus: open %s: %w", addr, err)
		}
	}
	return b, nil
}

// handshake is a fresh OnConnect for one connection the bus opens.
func (b *Bus) handshake() func(context.Context, *connector.Conn) error {
	hook := fence.OnConnect(b.canon, b.opt.Fence)
	if !b.opt.Defects.NoRefence {
		return hook
	}
	// Defect: the connection fences once and trusts itself after a reconnect.
	var once atomic.Bool
	return func(ctx context.Context, c *connector.Conn) error {
		if once.Load() {
			return nil
		}
		if err := hook(ctx, c); err != nil {
			return err
		}
		once.Store(true)
		return nil
	}
}

func (b *Bus) connOptions() connector.Options {
	return connector.Options{DialTimeout: b.opt.DialTimeout, OnConnect: b.handshake()}
}

// dial opens another fenced connection to the same server (a consumer's parking line).
func (b *Bus) dial(ctx context.Context) (*connector.Conn, error) {
	c, err := connector.Dial(ctx, b.addr, b.connOptions())
	if err != nil {
		return nil, fmt.Errorf("bus: dial %s: %w", b.addr, fence.Classify(err))
	}
	return c, nil
}

// Addr is the server address.
func (b *Bus) Addr() string { return b.addr }

// Digest is the canonical bundle digest the fence presents.
func (b *Bus) Digest() string { return b.canon.Digest() }

// Server is what the server's HELLO 2 said at the last (re)connect.
func (b *Bus) Server() connector.ServerInfo { return b.conn.Server() }

// Reconnect replaces the main connection's socket; the handshake runs again first. A minter
// that lost its lease is replaced by a freshly leased one that mints above every id so far.
func (b *Bus) Reconnect(ctx context.Context) error {
	if err := b.conn.Reconnect(ctx); err != nil {
		return fmt.Errorf("bus: reconnect: %w", fence.Classify(err))
	}
	old := b.mint.Load().m
	// The lease may have been lost while the connection was down: renew it on the server now
	// (A9); a minter that cannot (the repeating defect) is asked for an id instead.
	if r, ok := old.(interface{ Reaffirm(context.Context) error }); ok {
		if err := r.Reaffirm(ctx); err == nil {
			return nil // the lease holds
		}
	} else if _, err := old.Next(ctx); err == nil {
		return nil
	}
	m, err := b.newMinter(ctx)
	if err != nil {
		return fmt.Errorf("bus: reconnect: %w", err)
	}
	b.lastMu.Lock()
	last := b.last
	b.lastMu.Unlock()
	for !b.opt.Minter.Defects.NoFloor { // the defect skips the floor
		// Another worker id may sort below the old one within a millisecond: skip ahead.
		id, err := m.Next(ctx)
		if err != nil {
			m.Close()
			return fmt.Errorf("bus: reconnect: %w", err)
		}
		if id > last {
			break
		}
	}
	b.mint.Store(&minterBox{m})
	old.Close() // its lease is gone already; releasing is best effort
	return nil
}

// Close releases the minter lease and closes the connection. Idempotent.
func (b *Bus) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	err := b.mint.Load().m.Close()
	return errors.Join(err, b.conn.Close())
}

// typed wraps err with what the bus was doing; a canon error reply stays reachable with
// errors.Is / errors.As as an *emqerr.Error (resp.ServerError.As).
func typed(op string, err error) error {
	return fmt.Errorf("bus: %s: %w", op, err)
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
type leaser struct{ c *connector.Conn }

func (l leaser) set(ctx context.Context, worker int, args ...any) (bool, error) {
	k, err := keys.Minter(worker)
	if err != nil {
		return false, err
	}
	v, err := l.c.Do(ctx, append([]any{"SET", k}, args...)...)
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

// ForceRelease drops the lease whoever holds it: only the minter's ReleaseAny defect calls it.
func (l leaser) ForceRelease(ctx context.Context, worker int) error {
	k, err := keys.Minter(worker)
	if err != nil {
		return err
	}
	_, err = l.c.Do(ctx, "DEL", k)
	return err
}

func (b *Bus) newMinter(ctx context.Context) (minter, error) {
	mo := b.opt.Minter
	if b.opt.MinterTTL != 0 {
		mo.TTL = b.opt.MinterTTL
	}
	m, err := ids.NewMinter(ctx, leaser{b.conn}, mo)
	if err != nil {
		return nil, fmt.Errorf("bus: minter: %w", err)
	}
	if b.opt.Defects.RepeatIDs {
		return &repeater{m: m}, nil
	}
	return m, nil
}

// repeater is the RepeatIDs defect: the leased worker id, but the sequence is always 0, so two
// ids minted within one millisecond are equal.
type repeater struct{ m *ids.Minter }

func (r *repeater) Next(ctx context.Context) (string, error) {
	if _, err := r.m.NextSnowflake(ctx); err != nil { // keeps the lease checks honest
		return "", err
	}
	ms := uint64(time.Since(ids.Epoch).Milliseconds())
	return ids.Encode(ids.BrandJob, ids.Compose(ms, r.m.Worker(), 0)), nil
}

func (r *repeater) Close() error { return r.m.Close() }

// Mint mints a JOB id from the bus's leased minter.
func (b *Bus) Mint(ctx context.Context) (string, error) {
	id, err := b.mint.Load().m.Next(ctx)
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
