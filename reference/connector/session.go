package connector

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// call is one round trip: len(vals) replies expected for bytes already queued. Calls are pooled; the
// replies land in the call's own vals so an abandoned caller's memory is never written.
type call struct {
	vals     []resp.Value
	err      error
	deadline bool // a blocking command armed a read deadline; the reader disarms it
	state    atomic.Int32
	done     chan struct{}
	wire     []byte // scratch for encoding a single command outside the lock
}

const (
	callWaiting int32 = iota
	callDone
	callAbandoned
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func getCall(n int) *call {
	cl := callPool.Get().(*call)
	if cap(cl.vals) < n {
		cl.vals = make([]resp.Value, n)
	}
	cl.vals = cl.vals[:n]
	return cl
}

func putCall(cl *call) {
	clear(cl.vals)
	cl.err = nil
	cl.deadline = false
	cl.state.Store(callWaiting)
	if cap(cl.wire) > 64<<10 {
		cl.wire = nil
	}
	if cap(cl.vals) > 4096 {
		cl.vals = nil
	}
	callPool.Put(cl)
}

// session is one socket: callers append encoded commands and queue their calls under mu (one
// of them, the combiner, writes everything accumulated so far in one syscall), and a reader
// goroutine matches replies to calls in FIFO order.
type session struct {
	nc  net.Conn
	br  *bufio.Reader
	rd  *resp.Reader
	tap io.Writer

	mu      sync.Mutex
	wbuf    []byte  // encoded commands not yet written
	spare   []byte  // the other write buffer, swapped with wbuf by the combiner
	queue   []*call // calls whose replies have not started to be read
	writing bool    // a combiner is writing; others just append
	wdArmed bool    // a write deadline is set on the socket (the combiner's alone)

	inflight atomic.Int64  // calls submitted and not yet completed
	replies  atomic.Uint64 // calls answered: the watcher's sign of life
	// busySince is when (time since born) a call was submitted with nothing owed: the server's
	// silence counts from it, not from a reply that came before the request was even sent.
	busySince atomic.Int64
	born      time.Time
	blocking  atomic.Int32 // blocking calls owed (they carry their own read deadline)
	health    health
	fatal     *FatalError
	// onFail, set before the session is published, runs once when it is poisoned.
	onFail func()

	readerDone chan struct{}
}

func newSession(nc net.Conn, opt *Options) *session {
	size := opt.ReadBufferSize
	if size <= 0 {
		size = 64 << 10
	}
	br := bufio.NewReaderSize(nc, size)
	s := &session{
		nc:         nc,
		br:         br,
		rd:         resp.NewReader(br, opt.Limits),
		tap:        opt.Tap,
		readerDone: make(chan struct{}),
		born:       time.Now(),
	}
	go s.readLoop()
	return s
}

// submit queues wire (holding n commands) for cl and writes it, possibly together with other
// callers' commands, under the write deadline wd (none when zero): a server that stopped
// reading poisons the session instead of holding the writer. It returns the session's fatal
// error if it is poisoned.
func (s *session) submit(wire []byte, cl *call, deadline, wd time.Time) error {
	s.mu.Lock()
	if s.fatal != nil {
		err := s.fatal
		s.mu.Unlock()
		return err
	}
	if !deadline.IsZero() {
		// Armed before the bytes leave so the reader's disarm cannot precede it.
		cl.deadline = true
		s.blocking.Add(1)
		_ = s.nc.SetReadDeadline(deadline)
	}
	s.wbuf = append(s.wbuf, wire...)
	s.queue = append(s.queue, cl)
	owed := s.inflight.Add(1)
	if owed == 1 {
		s.busySince.Store(int64(time.Since(s.born)))
	}
	if s.writing {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	if owed > 1 {
		// Others are waiting on replies, so more commands are likely on their way: yield once
		// and let them join this write instead of paying a syscall each.
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	for len(s.wbuf) > 0 {
		buf := s.wbuf
		s.wbuf = s.spare[:0]
		s.mu.Unlock()
		err := s.write(buf, wd)
		s.mu.Lock()
		s.spare = buf[:0]
		if err != nil {
			s.writing = false
			s.mu.Unlock()
			s.fail("write", err)
			return nil // cl is completed with the fatal error by fail
		}
	}
	s.writing = false
	s.mu.Unlock()
	return nil
}

func (s *session) write(buf []byte, wd time.Time) error {
	if s.tap != nil {
		_, _ = s.tap.Write(buf)
	}
	// Only the combiner writes, so wdArmed needs no lock; skipping the no-deadline case keeps
	// the hot path free of a call per write.
	if !wd.IsZero() || s.wdArmed {
		_ = s.nc.SetWriteDeadline(wd)
		s.wdArmed = !wd.IsZero()
	}
	_, err := s.nc.Write(buf)
	return err
}

// fail poisons the session once, closes the socket and completes every queued call.
func (s *session) fail(op string, err error) *FatalError {
	s.mu.Lock()
	if s.fatal != nil {
		f := s.fatal
		s.mu.Unlock()
		return f
	}
	f := &FatalError{Op: op, Err: err}
	s.fatal = f
	q := s.queue
	s.queue = nil
	onFail := s.onFail
	s.mu.Unlock()
	_ = s.nc.Close()
	for _, cl := range q {
		complete(cl, f)
	}
	if onFail != nil {
		onFail()
	}
	return f
}

func (s *session) poisoned() *FatalError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// close poisons the session with cause and waits for the reader to stop.
func (s *session) close(op string, cause error) {
	s.fail(op, cause)
	<-s.readerDone
}

func complete(cl *call, err error) {
	cl.err = err
	if cl.state.CompareAndSwap(callWaiting, callDone) {
		cl.done <- struct{}{}
		return
	}
	putCall(cl) // the caller gave up; the call is ours to recycle
}

func (s *session) readLoop() {
	defer close(s.readerDone)
	var local []*call
	for {
		if len(local) == 0 {
			s.mu.Lock()
			local, s.queue = s.queue, local[:0]
			s.mu.Unlock()
		}
		if len(local) == 0 {
			// Idle: wait for bytes. Anything arriving with no call queued is unsolicited.
			if _, err := s.br.Peek(1); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					err = fmt.Errorf("%w: %w", ErrDeadline, err)
				}
				s.fail("read", err)
				return
			}
			s.mu.Lock()
			local, s.queue = s.queue, local[:0]
			s.mu.Unlock()
			if len(local) == 0 {
				s.fail("read", ErrUnsolicited)
				return
			}
		}
		for i, cl := range local {
			for j := range cl.vals {
				if err := s.rd.ReadInto(&cl.vals[j]); err != nil {
					if err == io.EOF {
						err = io.ErrUnexpectedEOF // a reply was owed
					} else if errors.Is(err, os.ErrDeadlineExceeded) {
						err = fmt.Errorf("%w: %w", ErrDeadline, err)
					}
					f := s.fail("read", err)
					for _, rest := range local[i:] {
						complete(rest, f)
					}
					return
				}
			}
			if cl.deadline {
				_ = s.nc.SetReadDeadline(time.Time{})
				s.blocking.Add(-1)
			}
			local[i] = nil
			s.inflight.Add(-1)
			s.replies.Add(1)
			complete(cl, nil)
		}
		local = local[:0]
	}
}
