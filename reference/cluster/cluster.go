// Package cluster routes the EchoMQ bundle over a Valkey Cluster. It holds the slot map (from
// CLUSTER SHARDS, primaries only), one connector.Conn per primary — each set up by HELLO 2, a
// cluster-mode engine check and the bundle fence, at connect and at every reconnect — and sends
// every call to the primary owning the slot of its keys.
//
// The co-location law makes this small: every key of queue q is emq:{q}:…, so every per-queue
// script is single-slot and goes whole to one node; the deployment keys ({emq}:bundle,
// {emq}:minter:<w>) live on the node owning slot("emq"). The router refuses a call whose keys
// span slots before a byte is sent (ErrCrossSlot), follows MOVED (refresh the map, retry on the
// new owner) and ASK (ASKING and the call on the target, once), waits out TRYAGAIN (a slot in
// migration whose keys are split between two nodes: the script did not run), and loads a script
// on the node that answers NOSCRIPT (EVALSHA first, always).
//
// Resharding (TestMigrationAbortsBeforeWrites): the engine checks a script's declared KEYS against
// a migrating slot, then every command inside it: on the source a command on a key that is not
// there (moved, or never there) aborts the script, on the target a multi-key command does; what the
// script wrote before stays. The bundle derives job rows and lane keys from the queue prefix, so
// every script that derives a key, or reads a key after a write that may have emptied it, reads
// first: one multi-key EXISTS touches every key it will need and lane state is read before the
// first write. An abort therefore leaves nothing written; the router reads it as TRYAGAIN (kindOf)
// and calls again once the keys are together, and a slot can move under load.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
	"github.com/echomq/kit/reference/slotmap"
	"github.com/echomq/kit/reference/wait"
)

var (
	// ErrCrossSlot: the keys of one call hash to more than one slot (refused locally; the
	// server would answer CROSSSLOT).
	ErrCrossSlot = errors.New("cluster: keys of one call span slots")
	// ErrNoKeys: a routed call names no key, so it has no slot.
	ErrNoKeys = errors.New("cluster: a routed call needs at least one key")
	// ErrNoOwner: the slot map names no primary for the slot.
	ErrNoOwner = errors.New("cluster: no primary owns the slot")
	// ErrRedirects: a call was redirected (MOVED/ASK/TRYAGAIN) more times than allowed.
	ErrRedirects = errors.New("cluster: too many redirects")
	// ErrMap: no seed or node gave a usable CLUSTER SHARDS reply.
	ErrMap = errors.New("cluster: no usable slot map")
)

// Options tune the router. The zero value is usable.
type Options struct {
	DialTimeout time.Duration // per node; 5s when zero
	// Fence tunes the engine check (AllowEngine admits another engine; the mode must still be
	// cluster: a router on a standalone server is a configuration mistake).
	Fence fence.Options
	// MaxRedirects bounds MOVED and ASK hops in a row; 8 when zero. Past it, and at every
	// TRYAGAIN, the call waits TryAgain (10ms when zero), rereads the map and starts again from
	// the owner; TryAgainLimit bounds the waits (1000 when zero), so a migration that never ends
	// surfaces as ErrRedirects.
	MaxRedirects  int
	TryAgain      time.Duration
	TryAgainLimit int
	// Observe, if set, sees every call's final answer: which node answered which slot.
	Observe func(Call)
	// Hook, if set, sees (and may rewrite) every command a node connection sends.
	Hook connector.Hook
	// HealthTimeout and HealthInterval tune the primary connections' health checks
	// (connector.Options); a connection that fails one is replaced at its next use.
	HealthTimeout, HealthInterval time.Duration
	// OnReconnect, if set, is told that a primary's connection, found lost (an I/O failure, or a
	// health check that went unanswered), was replaced: lines to that server dialled before may
	// be dead too.
	OnReconnect func(addr string)
}

// Call is one routed call as it was finally answered.
type Call struct {
	Slot   uint16
	Addr   string // the node that answered
	Asking bool   // it was sent after ASKING (an ASK redirect)
	Name   string // script name, or the command
	Err    error
}

// Stats count the redirects the router followed.
type Stats struct {
	Moved, Ask, TryAgain, Refreshes int64
}

// Router is safe for concurrent use.
type Router struct {
	seeds  []string
	opt    Options
	bundle *lua.Bundle
	fence  *connector.Script

	mu     sync.RWMutex
	owner  []string // slot -> primary host:port ("" = unowned)
	conns  map[string]*connector.Conn
	closed bool

	moved, ask, tryAgain, refreshes atomic.Int64
}

// Dial reads the slot map from the first seed that answers and connects (and fences) every
// primary, the {emq} slot's owner first.
func Dial(ctx context.Context, seeds []string, opt Options) (*Router, error) {
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%w: no seed address", ErrMap)
	}
	b, err := lua.Load()
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ls := b.MustScript(lua.Fence)
	src := ls.Source
	if opt.Fence.Source != "" {
		src = opt.Fence.Source // an edited fence, as fence.OnConnect runs it on a standalone server
	}
	r := &Router{seeds: append([]string(nil), seeds...), opt: opt, bundle: b,
		fence: connector.NewScript(ls.Name, src), conns: map[string]*connector.Conn{}}
	if r.opt.DialTimeout == 0 {
		r.opt.DialTimeout = 5 * time.Second
	}
	if r.opt.MaxRedirects == 0 {
		r.opt.MaxRedirects = 8
	}
	if r.opt.TryAgain == 0 {
		r.opt.TryAgain = 10 * time.Millisecond
	}
	if r.opt.TryAgainLimit == 0 {
		r.opt.TryAgainLimit = 1000
	}
	if err := r.Refresh(ctx); err != nil {
		return nil, err
	}
	first := r.Owner(keys.Slot(keys.Bundle()))
	for _, addr := range append([]string{first}, r.Primaries()...) {
		if _, err := r.conn(ctx, addr); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := r.LoadBundle(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// LoadBundle loads every script of the bundle on every primary (SCRIPT LOAD, digest checked), so
// the first EVALSHA of each script on each node hits. EVALSHA-first stays the rule: a node that
// loses its scripts (restart, SCRIPT FLUSH, a failover) is reloaded on its NOSCRIPT.
func (r *Router) LoadBundle(ctx context.Context) error {
	for _, addr := range r.Primaries() {
		c, err := r.conn(ctx, addr)
		if err != nil {
			return err
		}
		for _, ls := range r.bundle.Scripts() {
			if err := c.LoadScript(ctx, connector.NewScript(ls.Name, ls.Source)); err != nil {
				return fmt.Errorf("cluster: load bundle on %s: %w", addr, err)
			}
		}
	}
	return nil
}

// Bundle is the script bundle the router fences and runs.
func (r *Router) Bundle() *lua.Bundle { return r.bundle }

// Stats returns the redirect counters.
func (r *Router) Stats() Stats {
	return Stats{Moved: r.moved.Load(), Ask: r.ask.Load(), TryAgain: r.tryAgain.Load(), Refreshes: r.refreshes.Load()}
}

// Owner is the primary that owns slot in the router's map ("" if none).
func (r *Router) Owner(slot uint16) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.owner == nil {
		return ""
	}
	return r.owner[slot]
}

// Primaries lists the distinct primaries of the map, in slot order.
func (r *Router) Primaries() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	seen := map[string]bool{}
	for _, a := range r.owner {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// Close closes every node connection.
func (r *Router) Close() error {
	r.mu.Lock()
	conns := r.conns
	r.conns, r.closed = map[string]*connector.Conn{}, true
	r.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Check is the engine check for a cluster node: valkey >= 8.1.0 (fence.Check, opt honoured) in
// cluster mode. A standalone server is EMQSERVER here, as a cluster node is for a standalone bus.
func Check(info connector.ServerInfo, opt fence.Options) error {
	if info.Mode != "cluster" {
		return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("valkey mode %q: want cluster", info.Mode)}
	}
	info.Mode = "standalone" // the rest of the canon's check is unchanged
	return fence.Check(info, opt)
}

// handshake is a node connection's OnConnect: the engine check, then the bundle fence. The
// fence's key lives on one slot: on its owner the fence runs here, on the socket being set up;
// any other node answers MOVED and the fence runs on the owner through the router, so no node
// is used before the deployment's bundle has been checked.
func (r *Router) handshake(ctx context.Context, c *connector.Conn) error {
	if err := Check(c.Server(), r.opt.Fence); err != nil {
		return err
	}
	_, err := fence.RunScript(ctx, c, r.fence, r.bundle.Digest())
	var se *resp.ServerError
	if err == nil || !errors.As(err, &se) || (se.Kind != "MOVED" && se.Kind != "ASK") {
		return err
	}
	if _, err := r.EvalSha(ctx, r.fence, []string{keys.Bundle()}, lua.Version, r.bundle.Digest()); err != nil {
		return fmt.Errorf("fence on the {emq} slot's owner: %w", err)
	}
	return nil
}

// conn returns the fenced connection to addr, dialling it on first use. No lock is held while
// dialling: the handshake of one node may route the fence to another.
func (r *Router) conn(ctx context.Context, addr string) (*connector.Conn, error) {
	if addr == "" {
		return nil, ErrNoOwner
	}
	r.mu.RLock()
	c, closed := r.conns[addr], r.closed
	r.mu.RUnlock()
	if closed {
		return nil, &connector.FatalError{Op: "dial", Err: connector.ErrClosed}
	}
	if c != nil {
		if c.Err() == nil {
			return c, nil
		}
		// Every caller that met the loss asks; the socket is replaced once.
		replaced, err := c.Restore(ctx)
		if err != nil {
			return nil, fmt.Errorf("cluster: reconnect %s: %w", addr, fence.Classify(err))
		}
		if replaced && r.opt.OnReconnect != nil {
			r.opt.OnReconnect(addr)
		}
		return c, nil
	}
	c, err := r.dial(ctx, addr, r.opt.HealthInterval)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if have := r.conns[addr]; have != nil || r.closed {
		c.Close() // lost a race to another caller
		if have == nil {
			return nil, &connector.FatalError{Op: "dial", Err: connector.ErrClosed}
		}
		return have, nil
	}
	r.conns[addr] = c
	return c, nil
}

// dial connects and fences one node connection; every is its connector.Options.HealthInterval.
func (r *Router) dial(ctx context.Context, addr string, every time.Duration) (*connector.Conn, error) {
	c, err := connector.Dial(ctx, addr, connector.Options{DialTimeout: r.opt.DialTimeout, OnConnect: r.handshake,
		Hook: r.opt.Hook, HealthTimeout: r.opt.HealthTimeout, HealthInterval: every})
	if err != nil {
		return nil, fmt.Errorf("cluster: dial %s: %w", addr, fence.Classify(err))
	}
	return c, nil
}

// DialOwner opens a connection of its own (not shared, not reconnected: the caller closes it) to
// the primary owning key's slot, set up like every node connection (HELLO 2, the cluster engine
// check, the fence). A blocking pop needs one: it would stall every caller of a shared pipeline.
// It gets no periodic health check: its pop's own read deadline is one.
func (r *Router) DialOwner(ctx context.Context, key string) (*connector.Conn, error) {
	r.mu.RLock()
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		return nil, &connector.FatalError{Op: "dial", Err: connector.ErrClosed}
	}
	return r.dial(ctx, r.Owner(keys.Slot(key)), -1)
}

// Follow takes note of a redirect answered outside the router (a blocking pop on a line from
// DialOwner whose slot moved): a MOVED or ASK rereads the map, so the next DialOwner finds
// the new owner. Any other error is ignored.
func (r *Router) Follow(ctx context.Context, err error) {
	var se *resp.ServerError
	if errors.As(err, &se) && (se.Kind == "MOVED" || se.Kind == "ASK") {
		_ = r.Refresh(ctx) // best effort: a failed refresh is retried at the next redirect
	}
}

// Server is what the {emq} slot owner's HELLO 2 said (the zero value before it connected).
func (r *Router) Server() connector.ServerInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if c := r.conns[r.ownerLocked(keys.Slot(keys.Bundle()))]; c != nil {
		return c.Server()
	}
	return connector.ServerInfo{}
}

func (r *Router) ownerLocked(slot uint16) string {
	if r.owner == nil {
		return ""
	}
	return r.owner[slot]
}

// Reconnect replaces every primary connection's socket (the handshake runs again first on each).
func (r *Router) Reconnect(ctx context.Context) error {
	// The {emq} slot's owner first: the other nodes' handshakes run their redirected fence on
	// its new connection, never on the one being dropped.
	first := r.Owner(keys.Slot(keys.Bundle()))
	r.mu.RLock()
	conns := make([]*connector.Conn, 0, len(r.conns))
	if c := r.conns[first]; c != nil {
		conns = append(conns, c)
	}
	for addr, c := range r.conns {
		if addr != first {
			conns = append(conns, c)
		}
	}
	r.mu.RUnlock()
	var errs []error
	for _, c := range conns {
		if err := c.Reconnect(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cluster: reconnect: %w", fence.Classify(err)))
		}
	}
	return errors.Join(errs...)
}

// Reconnects counts the sockets, over every primary connection, that replaced a lost one.
func (r *Router) Reconnects() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n int64
	for _, c := range r.conns {
		n += c.Reconnects()
	}
	return n
}

// Refresh rereads the slot map (CLUSTER SHARDS) from a connected primary, else from the seeds.
func (r *Router) Refresh(ctx context.Context) error {
	r.refreshes.Add(1)
	var tried []error
	for _, addr := range append(r.Primaries(), r.seeds...) {
		owner, err := readShards(ctx, addr, r.opt)
		if err == nil {
			r.mu.Lock()
			r.owner = owner
			r.mu.Unlock()
			return nil
		}
		tried = append(tried, err)
	}
	return fmt.Errorf("%w: %w", ErrMap, errors.Join(tried...))
}

// readShards asks one node for CLUSTER SHARDS over a short-lived connection (HELLO 2 and the
// engine check only: it reads no key) and builds the slot -> primary table.
func readShards(ctx context.Context, addr string, opt Options) ([]string, error) {
	c, err := connector.Dial(ctx, addr, connector.Options{DialTimeout: opt.DialTimeout,
		OnConnect: func(_ context.Context, c *connector.Conn) error { return Check(c.Server(), opt.Fence) }})
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", addr, fence.Classify(err))
	}
	defer c.Close()
	v, err := c.Do(ctx, "CLUSTER", "SHARDS")
	if err != nil {
		return nil, fmt.Errorf("cluster: CLUSTER SHARDS on %s: %w", addr, err)
	}
	shards, err := slotmap.Parse(v, addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", addr, err)
	}
	return slotmap.Owners(shards), nil
}

// SlotOf is the one slot of keys, ErrNoKeys if there are none, ErrCrossSlot if they disagree.
func SlotOf(ks []string) (uint16, error) {
	if len(ks) == 0 {
		return 0, ErrNoKeys
	}
	slot := keys.Slot(ks[0])
	for _, k := range ks[1:] {
		if s := keys.Slot(k); s != slot {
			return 0, fmt.Errorf("%w: %q is slot %d, %q is slot %d", ErrCrossSlot, ks[0], slot, k, s)
		}
	}
	return slot, nil
}

// EvalSha runs script s (EVALSHA first; NOSCRIPT loads it on the answering node) on the primary
// owning the slot of its keys, following redirects.
func (r *Router) EvalSha(ctx context.Context, s *connector.Script, ks []string, args ...any) (resp.Value, error) {
	slot, err := SlotOf(ks)
	if err != nil {
		return resp.Value{}, fmt.Errorf("cluster: script %s: %w", s.Name, err)
	}
	return r.route(ctx, slot, s.Name, func(c *connector.Conn, asking bool) (resp.Value, error) {
		if !asking {
			return c.EvalSha(ctx, s, ks, args...)
		}
		cmd := append(append([]any{"EVALSHA", s.SHA1, len(ks)}, toAny(ks)...), args...)
		v, err := askingDo(ctx, c, cmd)
		if errors.Is(err, resp.ErrNoScript) {
			if err := c.LoadScript(ctx, s); err != nil {
				return resp.Value{}, err
			}
			return askingDo(ctx, c, cmd)
		}
		return v, err
	})
}

// Do runs one command on the primary owning key's slot, following redirects. args is the whole
// command, key included where the command takes it.
func (r *Router) Do(ctx context.Context, key string, args ...any) (resp.Value, error) {
	name, _ := args[0].(string)
	return r.route(ctx, keys.Slot(key), name, func(c *connector.Conn, asking bool) (resp.Value, error) {
		if asking {
			return askingDo(ctx, c, args)
		}
		return c.Do(ctx, args...)
	})
}

// Exec runs batch b, whose commands all have their keys in key's slot, on that slot's owner in
// one write, and appends the replies to dst[:0]. A command answered with a redirect (the slot
// moved, or is moving, under the batch) did not run: it is sent again alone through the router,
// which follows the redirect; its reply takes its place.
func (r *Router) Exec(ctx context.Context, key string, b *connector.Batch, dst []resp.Value) ([]resp.Value, error) {
	slot := keys.Slot(key)
	out, err := r.conn(ctx, r.Owner(slot))
	if err != nil {
		return dst[:0], fmt.Errorf("cluster: batch on slot %d: %w", slot, err)
	}
	vals, err := out.Exec(ctx, b, dst)
	if err != nil {
		return vals, err
	}
	for i := range vals {
		var se *resp.ServerError
		if e := vals[i].Err(); e == nil || !errors.As(e, &se) || !redirect(kindOf(se)) {
			continue
		}
		v, err := r.route(ctx, slot, "batch", func(c *connector.Conn, asking bool) (resp.Value, error) {
			one := new(connector.Batch)
			if asking {
				one.Add("ASKING")
			}
			vs, err := c.Exec(ctx, one.AddFrom(b, i), nil)
			if err != nil {
				return resp.Value{}, err
			}
			last := vs[len(vs)-1]
			if asking {
				if err := vs[0].Err(); err != nil {
					return vs[0], fmt.Errorf("cluster: ASKING: %w", err)
				}
			}
			return last, last.Err()
		})
		var sv *resp.ServerError
		if err != nil && !errors.As(err, &sv) {
			return vals, err // the connection failed, not the command
		}
		vals[i] = v
	}
	return vals, nil
}

// askingDo sends ASKING and the command in one write, so no other caller's command can come
// between them on the shared socket (ASKING holds for the next command only).
func askingDo(ctx context.Context, c *connector.Conn, cmd []any) (resp.Value, error) {
	vs, err := c.Pipeline(ctx, connector.Cmd{Args: []any{"ASKING"}}, connector.Cmd{Args: cmd})
	if err != nil {
		return resp.Value{}, err
	}
	if err := vs[0].Err(); err != nil {
		return vs[0], fmt.Errorf("cluster: ASKING: %w", err)
	}
	return vs[1], vs[1].Err()
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// route sends a call to the slot's owner and follows MOVED, ASK and TRYAGAIN.
func (r *Router) route(ctx context.Context, slot uint16, name string, send func(*connector.Conn, bool) (resp.Value, error)) (resp.Value, error) {
	addr, asking := r.Owner(slot), false
	hops, waits := 0, 0
	for {
		c, err := r.conn(ctx, addr)
		if err != nil {
			return resp.Value{}, fmt.Errorf("cluster: %s on slot %d: %w", name, slot, err)
		}
		v, err := send(c, asking)
		var se *resp.ServerError
		if err == nil || !errors.As(err, &se) || !redirect(kindOf(se)) {
			r.observe(Call{Slot: slot, Addr: addr, Asking: asking, Name: name, Err: err})
			return v, err
		}
		switch kindOf(se) {
		case "MOVED":
			r.moved.Add(1)
			hops++
			target, terr := redirectTarget(se.Message)
			if terr != nil {
				return v, terr
			}
			_ = r.Refresh(ctx) // best effort: the reply itself names the new owner
			r.setOwner(slot, target)
			addr, asking = target, false
		case "ASK":
			r.ask.Add(1)
			hops++
			target, terr := redirectTarget(se.Message)
			if terr != nil {
				return v, terr
			}
			addr, asking = target, true // once: a later answer starts again from the owner
		case "TRYAGAIN":
			r.tryAgain.Add(1)
			hops = r.opt.MaxRedirects + 1 // wait, then start again from the owner
		}
		if hops > r.opt.MaxRedirects {
			// A slot in migration (TRYAGAIN) or a topology still settling (redirects racing the
			// SETSLOT NODE updates): wait, reread the map and start again from the owner.
			waits++
			if waits > r.opt.TryAgainLimit {
				return v, fmt.Errorf("%w: %s on slot %d: %d waits: %w", ErrRedirects, name, slot, waits-1, err)
			}
			if err := wait.Sleep(ctx, r.opt.TryAgain); err != nil {
				return v, err
			}
			if kindOf(se) != "TRYAGAIN" {
				_ = r.Refresh(ctx)
			}
			addr, asking, hops = r.Owner(slot), false, 0
		}
	}
}

func (r *Router) observe(c Call) {
	if r.opt.Observe != nil {
		r.opt.Observe(c)
	}
}

func (r *Router) setOwner(slot uint16, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owner != nil {
		r.owner[slot] = addr
	}
}

func redirect(kind string) bool { return kind == "MOVED" || kind == "ASK" || kind == "TRYAGAIN" }

// kindOf is a server error's kind, with a script's migration abort read as TRYAGAIN. While a slot
// migrates, Valkey aborts a script at its first command on a key that is not on the node
// ("non local key" on the source; "undeclared keys were accessed during rehashing" for a
// multi-key command on either side). Every bundle script touches its keys before its first
// write, so such an abort wrote nothing and the call is waited out like TRYAGAIN.
func kindOf(se *resp.ServerError) string {
	if se.Kind == "ERR" && (strings.Contains(se.Message, "non local key") ||
		strings.Contains(se.Message, "during rehashing of the slot")) {
		return "TRYAGAIN"
	}
	return se.Kind
}

// redirectTarget reads "<slot> <host>:<port>" from a MOVED or ASK reply.
func redirectTarget(msg string) (string, error) {
	_, addr, ok := strings.Cut(msg, " ")
	if !ok || addr == "" {
		return "", fmt.Errorf("cluster: malformed redirect %q", msg)
	}
	return addr, nil
}

// SlotOfQueue is the slot every key of queue q hashes to.
func SlotOfQueue(q string) uint16 { return keys.Slot("emq:{" + q + "}:") }
