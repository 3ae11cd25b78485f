// Package connector is the kit's own RESP2 client. It speaks the wire itself so the kit sees
// exactly the bytes it sends: HELLO 2 and an OnConnect hook (the EchoMQ fence) at every
// connect, implicit pipelining of concurrent callers on one socket, EVALSHA-first scripts, and a
// poisoned-connection rule after any protocol or I/O failure.
//
// A *Conn is safe for concurrent use. Blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN, …)
// hold the reply stream until they answer, so they belong on a dedicated *Conn with a single
// owner; Do recognises them and arms a read deadline of the command's timeout plus
// Options.BlockSlack (bounded by ctx), so a server that never answers poisons the connection
// instead of hanging it.
package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// Options configure a Conn. The zero value is usable.
type Options struct {
	DialTimeout time.Duration
	// OnConnect runs after HELLO at connect and at every reconnect, before any other command
	// reaches the server (the EchoMQ fence hooks in here). An error refuses the connection.
	// The *Conn it receives is bound to the socket being set up.
	OnConnect func(ctx context.Context, c *Conn) error
	// Tap, if set, receives a copy of every byte written to the socket (the measured wire).
	// It is called from whichever goroutine writes; writes to it never overlap.
	Tap io.Writer
	// Limits bound the reply reader; zero fields take resp.DefaultLimits (512 MiB bulk,
	// depth 32).
	Limits resp.Limits
	// ReadBufferSize of the socket reader; 64 KiB when zero.
	ReadBufferSize int
	// BlockSlack is added to a blocking command's own timeout to form its read deadline;
	// 2s when zero.
	BlockSlack time.Duration
	// Redial makes the Conn reconnect by itself after any connection loss: a background loop
	// dials with jittered exponential backoff (capped at RedialMax) and runs HELLO 2 and
	// OnConnect on every new socket. Meanwhile every call fails at once with a *FatalError
	// (errors.Is ErrConnLost: retriable). A refusal by OnConnect or HELLO on a new socket ends
	// the loop: every later call returns it (ErrRefused), never a degraded session.
	Redial bool
	// RedialMax caps the backoff between reconnection attempts; 1s when zero.
	RedialMax time.Duration
	// OnRedial, if set, is told the outcome of every reconnection attempt (nil: reconnected).
	OnRedial func(err error)
	// HealthTimeout bounds a health check: the PING a suspect or silent connection is sent must
	// be answered within it, or the connection is poisoned (ErrUnhealthy) and, with Redial,
	// replaced. A connection is suspect once a call gave up on a reply still owed. 2s when zero.
	HealthTimeout time.Duration
	// HealthInterval is how often the connection is looked at: when no reply arrived for a
	// whole interval (idle, or stalled with calls owed) it gets a health check. 4s when zero;
	// negative turns the periodic check off (a parking line's blocking pop is its own check).
	HealthInterval time.Duration
	// Hook, if set, sees every command before it is encoded and sends what it returns instead
	// (like rueidishook): the seam the kit's tests and mutants observe and rewrite traffic at.
	// It runs on the caller's goroutine, possibly concurrently. Nil costs nothing.
	Hook Hook
}

// Hook observes and may rewrite one command: it receives the command's arguments (the name
// first; a script call arrives as EVALSHA sha numkeys keys… args…, a command of a Batch with
// every argument as []byte) and returns the arguments to send. It must not keep or modify args.
type Hook func(args []any) []any

// ServerInfo is the server's answer to HELLO 2.
type ServerInfo struct {
	Server, Version, Mode string
	Proto                 int64
	ID                    int64
	Role                  string
}

// Conn is a RESP2 connection with implicit pipelining.
type Conn struct {
	addr string
	opt  Options

	sess       atomic.Pointer[session]
	info       atomic.Pointer[ServerInfo]
	closed     atomic.Bool
	reconn     sync.Mutex // serialises Reconnect, the redial loop's swaps and Close
	redialing  atomic.Bool
	refused    atomic.Pointer[error] // a redial's refusal: final
	reconnects atomic.Int64
	loops      sync.WaitGroup // the redial loop and the health watcher
	stop       chan struct{}  // closed by Close: the watcher ends
	setup      bool           // the view connect hands HELLO and OnConnect: no health checks
}

// Dial connects to addr, runs HELLO 2 and then opt.OnConnect.
func Dial(ctx context.Context, addr string, opt Options) (*Conn, error) {
	c := &Conn{addr: addr, opt: opt, stop: make(chan struct{})}
	s, info, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.publish(s)
	c.info.Store(info)
	if every := opt.healthInterval(); every > 0 {
		c.loops.Add(1)
		go c.watch(every)
	}
	return c, nil
}

// connect builds a ready session: socket, HELLO 2, OnConnect. Nothing else can reach the
// socket before it is published, so the hook really runs first.
func (c *Conn) connect(ctx context.Context) (*session, *ServerInfo, error) {
	// Dial, HELLO and OnConnect together, under DialTimeout or ctx's deadline, whichever is
	// sooner (DefaultDialTimeout when neither is given): a server that accepts and never
	// answers cannot hold a connect.
	timeout := c.opt.DialTimeout
	if _, ok := ctx.Deadline(); !ok && timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connector: dial %s: %w", c.addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	s := newSession(nc, &c.opt)
	view := &Conn{addr: c.addr, opt: c.opt, setup: true} // a failed handshake fails the connect
	view.sess.Store(s)
	info, err := hello(ctx, view)
	if err != nil {
		s.close("hello", err)
		return nil, nil, err
	}
	view.info.Store(info)
	if c.opt.OnConnect != nil {
		if err := c.opt.OnConnect(ctx, view); err != nil {
			s.close("onconnect", err)
			if errors.Is(err, ErrFatal) || ctx.Err() != nil || transientReply(err) {
				return nil, nil, fmt.Errorf("connector: OnConnect: %w", err) // try again later
			}
			return nil, nil, &refusal{fmt.Errorf("connector: connection refused by OnConnect: %w", err)}
		}
	}
	return s, info, nil
}

func hello(ctx context.Context, c *Conn) (*ServerInfo, error) {
	v, err := c.Do(ctx, "HELLO", "2")
	if err != nil {
		var se *resp.ServerError
		if errors.As(err, &se) && !transientReply(err) {
			return nil, &refusal{fmt.Errorf("%w: %w", ErrHello, se)}
		}
		return nil, fmt.Errorf("connector: HELLO 2: %w", err)
	}
	info, err := ParseHello(v)
	if err != nil {
		return nil, &refusal{err}
	}
	return info, nil
}

// transientReply reports an error reply a server gives while it cannot serve yet (loading its
// dataset after a restart, a busy script, a replica syncing): the connect is retried, never
// taken for a refusal.
func transientReply(err error) bool {
	var se *resp.ServerError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Kind {
	case "LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN":
		return true
	}
	return false
}

// ParseHello reads the flat key/value array a RESP2 HELLO reply is.
func ParseHello(v resp.Value) (*ServerInfo, error) {
	if v.Type != resp.Array || v.Null || len(v.Elems)%2 != 0 {
		return nil, fmt.Errorf("%w: reply is a %s, not a key/value array", ErrHello, v.Type)
	}
	info := &ServerInfo{}
	for i := 0; i < len(v.Elems); i += 2 {
		k, val := v.Elems[i], v.Elems[i+1]
		switch strings.ToLower(k.Text()) {
		case "server":
			info.Server = val.Text()
		case "version":
			info.Version = val.Text()
		case "mode":
			info.Mode = val.Text()
		case "role":
			info.Role = val.Text()
		case "proto":
			n, err := val.Int64()
			if err != nil {
				return nil, fmt.Errorf("%w: proto: %w", ErrHello, err)
			}
			info.Proto = n
		case "id":
			n, err := val.Int64()
			if err != nil {
				return nil, fmt.Errorf("%w: id: %w", ErrHello, err)
			}
			info.ID = n
		}
	}
	if info.Server == "" || info.Version == "" || info.Proto != 2 {
		return nil, fmt.Errorf("%w: reply lacks server/version or proto is not 2", ErrHello)
	}
	return info, nil
}

// Server returns what HELLO 2 said at the last (re)connect.
func (c *Conn) Server() ServerInfo {
	if p := c.info.Load(); p != nil {
		return *p
	}
	return ServerInfo{}
}

// Addr is the address the connection dials.
func (c *Conn) Addr() string { return c.addr }

// Err returns the refusal that ended the redial loop, or the *FatalError poisoning the
// connection, or nil while it is healthy.
func (c *Conn) Err() error {
	if r := c.refused.Load(); r != nil {
		return *r
	}
	if f := c.sess.Load().poisoned(); f != nil {
		return f
	}
	return nil
}

// Reconnects counts the sockets that replaced a lost one, by Reconnect or by the redial loop.
func (c *Conn) Reconnects() int64 { return c.reconnects.Load() }

// publish makes s the live socket; with Redial, its loss starts the redial loop.
func (c *Conn) publish(s *session) {
	c.sess.Store(s)
	if !c.opt.Redial {
		return
	}
	s.mu.Lock()
	s.onFail = func() { c.startRedial(s) }
	lost := s.fatal != nil // it failed before it was published
	s.mu.Unlock()
	if lost {
		c.startRedial(s)
	}
}

// startRedial runs one redial loop at a time, for the loss of lost.
func (c *Conn) startRedial(lost *session) {
	if c.closed.Load() || !c.redialing.CompareAndSwap(false, true) {
		return
	}
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		c.redial(lost)
		c.redialing.Store(false)
		// A socket lost while this loop still ran found it busy: pick its loss up now.
		if cur := c.sess.Load(); cur.poisoned() != nil && c.refused.Load() == nil {
			c.startRedial(cur)
		}
	}()
}

// redial replaces the lost socket, retrying with jittered exponential backoff until it
// succeeds, the Conn closes, someone else replaced it, or a new socket is refused.
func (c *Conn) redial(lost *session) {
	capped := c.opt.RedialMax
	if capped <= 0 {
		capped = time.Second
	}
	timeout := c.opt.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			time.Sleep(backoff(attempt, capped))
		}
		c.reconn.Lock()
		if c.closed.Load() || c.sess.Load() != lost {
			c.reconn.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		s, info, err := c.connect(ctx)
		cancel()
		if err == nil {
			c.info.Store(info)
			c.publish(s)
			c.reconnects.Add(1)
		}
		var r *refusal
		if errors.As(err, &r) {
			c.refused.Store(&err)
		}
		c.reconn.Unlock()
		if c.opt.OnRedial != nil {
			c.opt.OnRedial(err)
		}
		if err == nil || r != nil {
			return
		}
	}
}

// backoff is 10ms doubling per attempt up to capped, with full jitter in its upper half.
func backoff(attempt int, capped time.Duration) time.Duration {
	d := min(10*time.Millisecond<<min(attempt, 16), capped)
	return d/2 + rand.N(d/2+1)
}

// Reconnect replaces the socket: new dial, HELLO 2, OnConnect. Calls in flight on the old
// socket fail with a *FatalError. On error the old (poisoned) socket stays in place.
func (c *Conn) Reconnect(ctx context.Context) error {
	c.reconn.Lock()
	defer c.reconn.Unlock()
	if c.closed.Load() {
		return &FatalError{Op: "reconnect", Err: ErrClosed}
	}
	return c.replace(ctx)
}

// replace puts a new socket in place of the current one; c.reconn is held.
func (c *Conn) replace(ctx context.Context) error {
	s, info, err := c.connect(ctx)
	if err != nil {
		return err
	}
	old := c.sess.Load()
	old.mu.Lock()
	old.onFail = nil // its end is ours, not a loss to redial
	old.mu.Unlock()
	c.info.Store(info)
	c.publish(s)
	c.refused.Store(nil)
	c.reconnects.Add(1)
	old.close("reconnect", errors.New("connector: replaced by Reconnect"))
	return nil
}

// Restore replaces the socket like Reconnect, but only while it is still lost: callers that
// all met the same loss replace it once, and a healthy socket is left alone. replaced says
// whether this call put a new socket in place.
func (c *Conn) Restore(ctx context.Context) (replaced bool, err error) {
	c.reconn.Lock()
	defer c.reconn.Unlock()
	if c.closed.Load() {
		return false, &FatalError{Op: "reconnect", Err: ErrClosed}
	}
	if c.sess.Load().poisoned() == nil {
		return false, nil // replaced meanwhile, or never lost
	}
	if err := c.replace(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// Close closes the socket; every later call returns a *FatalError wrapping ErrClosed.
func (c *Conn) Close() error {
	c.reconn.Lock()
	defer c.reconn.Unlock()
	if c.closed.Swap(true) {
		return nil
	}
	c.sess.Load().close("close", ErrClosed)
	close(c.stop)
	c.reconn.Unlock()
	c.loops.Wait() // a redial loop in its backoff sees closed and ends; so does the watcher
	c.reconn.Lock()
	return nil
}

// roundTrip sends wire (n commands) and waits for n replies, copied into dst (grown as needed).
func (c *Conn) roundTrip(ctx context.Context, cl *call, wire []byte, dst []resp.Value, deadline time.Time) ([]resp.Value, error) {
	if err := ctx.Err(); err != nil {
		putCall(cl)
		return dst, err
	}
	if r := c.refused.Load(); r != nil {
		putCall(cl)
		return dst, *r
	}
	s := c.sess.Load()
	wd, _ := ctx.Deadline()
	if err := s.submit(wire, cl, deadline, wd); err != nil {
		putCall(cl)
		return dst, err
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		blocking := cl.deadline // read before cl may be recycled
		if cl.state.CompareAndSwap(callWaiting, callAbandoned) {
			// The reader consumes the reply and recycles cl. A reply still owed past the call's
			// deadline makes the socket suspect (a blocking pop has its own read deadline).
			if !blocking && !c.setup {
				s.check(&c.opt)
			}
			return dst, ctx.Err()
		}
		<-cl.done
	}
	if cl.err != nil {
		err := cl.err
		putCall(cl)
		return dst, err
	}
	dst = append(dst[:0], cl.vals...)
	putCall(cl)
	return dst, nil
}

// Do sends one command and returns its reply. An error reply is returned both as the Value
// and as its *resp.ServerError. Arguments: string, []byte, int, int64, uint64, float64 (and
// the other scalars resp.AppendCommand accepts).
func (c *Conn) Do(ctx context.Context, args ...any) (resp.Value, error) {
	if c.opt.Hook != nil {
		args = c.opt.Hook(args)
	}
	cl := getCall(1)
	var err error
	cl.wire, err = resp.AppendCommand(cl.wire[:0], args...)
	if err != nil {
		putCall(cl)
		return resp.Value{}, fmt.Errorf("connector: %w", err)
	}
	var deadline time.Time
	if len(args) > 0 {
		if timeout, ok := blockingTimeout(args); ok {
			deadline = c.blockDeadline(ctx, timeout)
		}
	}
	var one [1]resp.Value
	out, err := c.roundTrip(ctx, cl, cl.wire, one[:0], deadline)
	if err != nil {
		return resp.Value{}, err
	}
	return out[0], out[0].Err()
}

// DoBlocking is Do for a blocking command whose server-side timeout is given explicitly (0 =
// forever); see the package comment for why it belongs on a dedicated Conn.
func (c *Conn) DoBlocking(ctx context.Context, timeout time.Duration, args ...any) (resp.Value, error) {
	if c.opt.Hook != nil {
		args = c.opt.Hook(args)
	}
	cl := getCall(1)
	var err error
	cl.wire, err = resp.AppendCommand(cl.wire[:0], args...)
	if err != nil {
		putCall(cl)
		return resp.Value{}, fmt.Errorf("connector: %w", err)
	}
	var one [1]resp.Value
	out, err := c.roundTrip(ctx, cl, cl.wire, one[:0], c.blockDeadline(ctx, timeout))
	if err != nil {
		return resp.Value{}, err
	}
	return out[0], out[0].Err()
}

func (c *Conn) blockDeadline(ctx context.Context, timeout time.Duration) time.Time {
	slack := c.opt.BlockSlack
	if slack <= 0 {
		slack = 2 * time.Second
	}
	var d time.Time
	if timeout > 0 {
		d = time.Now().Add(timeout + slack)
	}
	if cd, ok := ctx.Deadline(); ok && (d.IsZero() || cd.Add(slack).Before(d)) {
		d = cd.Add(slack)
	}
	return d
}

// blockingTimeout recognises the list/zset blocking pops and returns their timeout argument.
func blockingTimeout(args []any) (time.Duration, bool) {
	name, ok := args[0].(string)
	if !ok || len(name) < 4 || (name[0] != 'B' && name[0] != 'b') {
		return 0, false
	}
	var idx int
	switch strings.ToUpper(name) {
	case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX", "BRPOPLPUSH", "BLMOVE":
		idx = len(args) - 1
	case "BLMPOP", "BZMPOP":
		idx = 1
	default:
		return 0, false
	}
	if idx < 1 || idx >= len(args) {
		return 0, false
	}
	var secs float64
	switch t := args[idx].(type) {
	case int:
		secs = float64(t)
	case int64:
		secs = float64(t)
	case float64:
		secs = t
	case string:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return 0, false
		}
		secs = f
	default:
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

// Cmd is one command of an explicit Pipeline.
type Cmd struct{ Args []any }

// Pipeline sends cmds in one write and returns their replies in order. Error replies stay
// Values (Value.Err()); the error is for the connection, a cancelled ctx or a bad argument.
// For a cheaper, allocation-free path reuse a Batch with Exec.
func (c *Conn) Pipeline(ctx context.Context, cmds ...Cmd) ([]resp.Value, error) {
	b := batchPool.Get().(*Batch)
	defer func() { b.Reset(); batchPool.Put(b) }()
	for _, cmd := range cmds {
		b.Add(cmd.Args...)
	}
	return c.Exec(ctx, b, make([]resp.Value, 0, len(cmds)))
}

var batchPool = sync.Pool{New: func() any { return new(Batch) }}
