package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// DrainMarks time a drain from its first handler start to its n-th recorded acknowledgement:
// filling the backlog and a client's start-up (River's leader election and notifier, the
// consumers' goroutines) stay outside the window for every system alike.
type DrainMarks struct {
	n     int64
	begun time.Time    // Drain was called
	first atomic.Int64 // unix nanos of the first handler start
	acked atomic.Int64
	last  atomic.Int64 // unix nanos of the n-th acknowledgement
	after func()       // run once the n-th ack is stamped; nil for none
	done  chan struct{}
}

// NewDrainMarks times a drain of n jobs; after (nil for none) runs once the n-th ack is stamped.
func NewDrainMarks(n int, after func()) *DrainMarks {
	return &DrainMarks{n: int64(n), begun: time.Now(), after: after, done: make(chan struct{})}
}

// N is the number of jobs the drain must acknowledge.
func (m *DrainMarks) N() int64 { return m.n }

// Done is closed at the n-th acknowledgement.
func (m *DrainMarks) Done() <-chan struct{} { return m.done }

// Started is called at each handler start.
func (m *DrainMarks) Started() {
	if m.first.Load() == 0 {
		m.first.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// Ack is called once per job whose completion the system has recorded.
func (m *DrainMarks) Ack() {
	if m.acked.Add(1) == m.n {
		m.last.Store(time.Now().UnixNano())
		if m.after != nil {
			m.after()
		}
		close(m.done)
	}
}

// AckAll records every remaining ack at once, for a system whose end is observed as a whole.
func (m *DrainMarks) AckAll() {
	if rest := m.n - m.acked.Load(); rest > 0 {
		m.acked.Add(rest - 1)
		m.Ack()
	}
}

// Measured records a window a driven system measured itself: its first handler start startup
// after Drain was called and its last ack window after that.
func (m *DrainMarks) Measured(startup, window time.Duration) {
	first := m.begun.Add(startup)
	m.first.Store(first.UnixNano())
	m.acked.Store(m.n - 1)
	m.last.Store(first.Add(window).UnixNano())
	if m.after != nil {
		m.after()
	}
	m.acked.Add(1)
	close(m.done)
}

// Wait blocks until n acks, ctx's end or a failure on errc.
func (m *DrainMarks) Wait(ctx context.Context, errc <-chan error) error {
	select {
	case <-m.done:
		return nil
	case err := <-errc:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %d of %d acknowledged: %w", ErrIncomplete, m.acked.Load(), m.n, ctx.Err())
	}
}

// Window is the drain's outcome: jobs/s over the window and the start-up before it.
func (m *DrainMarks) Window() (rate float64, startup time.Duration, err error) {
	first, last := m.first.Load(), m.last.Load()
	if got := m.acked.Load(); got != m.n || first == 0 || last <= first {
		return 0, 0, fmt.Errorf("%w: %d of %d acknowledged", ErrIncomplete, got, m.n)
	}
	return float64(m.n) / (float64(last-first) / 1e9), time.Unix(0, first).Sub(m.begun), nil
}
