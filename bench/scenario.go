package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario names, in report order.
const (
	ScEnqueueSingle = "enqueue-single"
	ScEnqueueConc   = "enqueue-concurrent"
	ScEnqueueBatch  = "enqueue-batch"
	ScEnqueueTx     = "enqueue-transactional"
	ScDrain         = "drain"
	ScDrainOnce     = "drain-exactly-once"
	ScLatency       = "latency-e2e"
)

// Scenarios lists every scenario the report must contain, in order.
var Scenarios = []string{ScEnqueueSingle, ScEnqueueConc, ScEnqueueBatch, ScEnqueueTx, ScDrain, ScDrainOnce, ScLatency}

// timed runs op from conc goroutines until d has passed and returns jobs per second. op
// returns how many jobs it enqueued. The first error stops the run.
func timed(ctx context.Context, d time.Duration, conc int, op func(ctx context.Context, worker int) (int, error)) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var jobs atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n, err := op(ctx, w)
				if err != nil {
					if ctx.Err() == nil {
						first.CompareAndSwap(nil, &err)
					}
					cancel()
					return
				}
				jobs.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := first.Load(); p != nil {
		return 0, *p
	}
	if err := ctx.Err(); err != nil && jobs.Load() == 0 {
		return 0, err
	}
	return float64(jobs.Load()) / elapsed.Seconds(), nil
}

// openLoop offers rate jobs/s for d to q (consumed by workers) and measures enqueue → handler
// start. Each job carries its intended send instant and latency is counted from that instant,
// not from when a sender got round to it: a stalled sender cannot hide queueing delay
// (coordinated omission). Senders are a pool so one slow enqueue does not delay the schedule.
// CPU is accounted into a from the first send to the last arrival.
func openLoop(ctx context.Context, q Queue, rate float64, d time.Duration, workers, senders int, clock cpuClock, a *cpuAcc) (LatencyResult, error) {
	res := LatencyResult{System: q.Name()}
	hist := newLatencyHist()
	// The sender's own lateness (hand-off to the Enqueue call minus the intended instant) is
	// inside every system's latency: timers on a loaded machine wake late. It is reported
	// beside the latency so the reader can tell the generator's share from the queue's.
	late := newLatencyHist()
	var received atomic.Int64
	stop, err := q.Consume(ctx, workers, func(sent int64) {
		hist.record(time.Duration(time.Now().UnixNano() - sent))
		received.Add(1)
	})
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	// Consumers start (River elects a leader and listens, the bus parks, Oban's model listens):
	// start-up is not what this scenario measures.
	if !sleepCtx(ctx, time.Second) {
		return res, ctx.Err()
	}

	n := int64(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	todo := make(chan int64, n)
	var sendErr atomic.Pointer[error]
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range todo {
				late.record(time.Duration(time.Now().UnixNano() - t))
				if err := q.Enqueue(ctx, payload(t)); err != nil {
					sendErr.CompareAndSwap(nil, &err)
					continue
				}
				sent.Add(1)
			}
		}()
	}
	c0 := clock.read()
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 && !sleepCtx(ctx, w) {
			break
		}
		todo <- at.UnixNano()
	}
	close(todo)
	wg.Wait()
	res.Offered = n
	res.Sent = sent.Load()
	res.SendSeconds = time.Since(start).Seconds()
	// Wait for the tail: every sent job must reach a handler.
	deadline := time.Now().Add(10*time.Second + d)
	for received.Load() < res.Sent && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	a.add(c0, clock.read())
	stopped = true
	serr := stop()
	res.Received = received.Load()
	res.Latency = hist.summary()
	res.SenderLate = late.summary()
	switch {
	case sendErr.Load() != nil:
		return res, fmt.Errorf("enqueue: %w", *sendErr.Load())
	case serr != nil:
		return res, fmt.Errorf("stop consumers: %w", serr)
	case res.Received < res.Sent:
		return res, fmt.Errorf("%w: %d of %d jobs reached a handler", errIncomplete, res.Received, res.Sent)
	}
	return res, nil
}

// LatencyResult is one system's run of the latency scenario.
type LatencyResult struct {
	System      string  `json:"system"`
	Offered     int64   `json:"offered"`
	Sent        int64   `json:"sent"`
	Received    int64   `json:"received"`
	SendSeconds float64 `json:"send_seconds"`
	Latency     Latency `json:"latency"`
	// SenderLate is the load generator's lateness at the hand-off to Enqueue (already counted
	// inside Latency, for every system alike).
	SenderLate Latency `json:"sender_late"`
	CPU        *CPU    `json:"cpu,omitempty"`
	Err        string  `json:"error,omitempty"`
}

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

func newDrainMarks(n int) *DrainMarks {
	return &DrainMarks{n: int64(n), begun: time.Now(), done: make(chan struct{})}
}

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

// wait blocks until n acks, ctx's end or a failure on errc.
func (m *DrainMarks) wait(ctx context.Context, errc <-chan error) error {
	select {
	case <-m.done:
		return nil
	case err := <-errc:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %d of %d acknowledged: %w", errIncomplete, m.acked.Load(), m.n, ctx.Err())
	}
}

// drainResult is one timed drain.
type drainResult struct {
	rate    float64       // jobs/s over the window
	startup time.Duration // Drain called → first handler start (not in the window)
}

// drainOnce pre-fills n jobs and times their burn-down by workers; before runs between the
// fill and the drain, after at the last ack (outside the window).
func drainOnce(ctx context.Context, q Queue, n, workers int, before, after func()) (drainResult, error) {
	if err := q.Reset(ctx); err != nil {
		return drainResult{}, err
	}
	if err := q.Fill(ctx, n); err != nil {
		return drainResult{}, err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	before()
	m := newDrainMarks(n)
	m.after = after
	if err := q.Drain(dctx, workers, m); err != nil {
		return drainResult{}, err
	}
	first, last := m.first.Load(), m.last.Load()
	if got := m.acked.Load(); got != int64(n) || first == 0 || last <= first {
		return drainResult{}, fmt.Errorf("%w: %d of %d acknowledged", errIncomplete, got, n)
	}
	return drainResult{rate: float64(n) / (float64(last-first) / 1e9), startup: time.Unix(0, first).Sub(m.begun)}, nil
}
