package connector

import (
	"fmt"
	"sync"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// Health checking. A socket can die without an error: a frozen path or a failover behind an
// address keeps it open while nothing comes back, and the kernel gives up only after many
// minutes. So a connection is judged by its replies:
//
//   - A call abandoned at its deadline (or cancelled) while its reply is still owed makes the
//     session suspect: a PING goes out behind the owed replies. A late but live server answers
//     it and the suspicion is dropped; when a whole HealthTimeout passes with no reply read at
//     all, the session is poisoned (ErrUnhealthy) and, with Redial, replaced.
//   - Meanwhile any call that fails on the socket (an I/O error) poisons it at once, as always.
//     Further calls that give up are no evidence of their own: a short deadline (a heartbeat's
//     is a third of a lease) passes on a busy but live server, and closing such a socket would
//     lose the replies it still owes.
//   - A watcher looks at the live session four times per HealthInterval: once no reply has
//     arrived for a whole interval (idle, or calls owed and stalled, even calls without a
//     deadline), it checks the session the same way. A call sent with nothing owed starts the
//     interval afresh: the server cannot have answered it before it was sent. A frozen socket
//     is thus closed within 1¼ HealthInterval + HealthTimeout of the oldest call it owes (or of
//     its last reply, idle), however its callers set their deadlines.
//
// Blocking commands are left out: they hold the reply stream for their own timeout and carry a
// read deadline of it plus BlockSlack, which poisons a session that never answers them.

// Defaults of the health options.
const (
	// A PING behind a large command on a loaded machine waited more than a second for the
	// server (a correct port failed C06 largest-payload-and-checkpoint); two seconds of no reply
	// at all, with a watch every interval of 4 s, still finds a frozen socket within
	// 1¼·4 + 2 s, the 7 s of the old pair, inside B-290's 10 s.
	DefaultHealthTimeout  = 2 * time.Second
	DefaultHealthInterval = 4 * time.Second
	// DefaultDialTimeout bounds dial, HELLO and OnConnect when neither Options.DialTimeout nor
	// the ctx gives a bound.
	DefaultDialTimeout = 5 * time.Second
)

func (o *Options) healthTimeout() time.Duration {
	if o.HealthTimeout > 0 {
		return o.HealthTimeout
	}
	return DefaultHealthTimeout
}

func (o *Options) healthInterval() time.Duration {
	if o.HealthInterval == 0 {
		return DefaultHealthInterval
	}
	return o.HealthInterval
}

// health is a session's health-check state.
type health struct {
	mu       sync.Mutex
	checking bool // a PING is out
}

// check sends one PING unless one is out already, and poisons the session if its reply has
// not arrived within HealthTimeout (the write is bounded the same way).
func (s *session) check(opt *Options) {
	s.health.mu.Lock()
	if s.health.checking {
		s.health.mu.Unlock()
		return
	}
	s.health.checking = true
	s.health.mu.Unlock()
	timeout := opt.healthTimeout()
	args := []any{"PING"}
	if opt.Hook != nil {
		args = opt.Hook(args)
	}
	cl := getCall(1)
	var err error
	if cl.wire, err = resp.AppendCommand(cl.wire[:0], args...); err != nil {
		putCall(cl)
		s.fail("health", fmt.Errorf("connector: health check: %w", err))
		return
	}
	if err := s.submit(cl.wire, cl, noDeadline, time.Now().Add(timeout)); err != nil {
		putCall(cl) // poisoned already
		return
	}
	go s.await(cl, timeout)
}

// await waits for the health check's reply. The session fails only when a whole timeout passed
// with no reply read at all: owed replies still arriving mean a slow server working through a
// backlog, not a dead one, so the wait goes on (the PING is behind them). A last look a tenth of
// the timeout later gives a reader that was not scheduled (a busy machine) its chance.
func (s *session) await(cl *call, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	seen := s.replies.Load()
	for {
		select {
		case <-cl.done:
			s.checked(cl)
			return
		case <-t.C:
		}
		if n := s.replies.Load(); n != seen {
			seen = n
			t.Reset(timeout)
			continue
		}
		time.Sleep(timeout / 10)
		if n := s.replies.Load(); n != seen {
			seen = n
			t.Reset(timeout)
			continue
		}
		if !cl.state.CompareAndSwap(callWaiting, callAbandoned) {
			<-cl.done // answered at the last moment; the session is judged by it
			s.checked(cl)
			return
		}
		s.fail("health", fmt.Errorf("%w: no reply to PING, nor any other, within %v", ErrUnhealthy, timeout))
		return
	}
}

// checked takes the health check's answer, received: a reply clears the suspicion (an error
// means the session failed already).
func (s *session) checked(cl *call) {
	ok := cl.err == nil
	putCall(cl)
	if ok {
		s.health.mu.Lock()
		s.health.checking = false
		s.health.mu.Unlock()
	}
}

// watch checks the live session whenever a whole interval passed without a reply on it, until
// the Conn closes. It looks four times per interval, so silence is seen within a quarter more.
func (c *Conn) watch(interval time.Duration) {
	defer c.loops.Done()
	tick := max(interval/4, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var last *session
	var seen uint64
	since := time.Now() // when the reply count was last seen to move
	for {
		var now time.Time
		select {
		case <-c.stop:
			return
		case now = <-t.C:
		}
		s := c.sess.Load()
		n := s.replies.Load()
		if s != last || n != seen || s.blocking.Load() > 0 {
			last, seen, since = s, n, now // a blocking pop is judged by its own deadline
			continue
		}
		if busy := s.born.Add(time.Duration(s.busySince.Load())); busy.After(since) {
			// A request sent after a quiet spell: the server owes nothing older, and a large one
			// takes a loaded server seconds to read and run (a PING sent behind a 2 MiB enqueue
			// the moment it left poisoned a live connection).
			since = busy
		}
		if now.Sub(since) >= interval-tick/2 && s.poisoned() == nil { // four ticks, whatever their jitter
			s.check(&c.opt)
			since = now // one check per silent interval
		}
	}
}
