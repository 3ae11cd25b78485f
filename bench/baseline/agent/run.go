package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// payload is a job's body: its intended send instant (unix nanos) in 8 bytes.
func payload(t int64) []byte { return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(t)) }

func sentAt(p []byte) int64 {
	if len(p) != 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(p))
}

// drain fills the backlog (outside the window), then times the bus's consumer from the first
// handler start until every job has started and the queue's pending and active sets are empty
// on the server (a completed job leaves neither), read every millisecond by the observer.
func drain(ctx context.Context, b busAPI, p params) (Result, error) {
	for done := 0; done < p.n; {
		k := min(500, p.n-done)
		batch := make([][]byte, k)
		for i := range batch {
			batch[i] = payload(0)
		}
		if err := b.EnqueueBatch(ctx, p.queue, batch); err != nil {
			return Result{}, fmt.Errorf("fill: %w", err)
		}
		done += k
	}
	obs, err := dialObserver(ctx, p.valkey)
	if err != nil {
		return Result{}, err
	}
	defer obs.close()
	var started, first atomic.Int64
	stop, err := b.Consume(ctx, p.queue, p.workers, p.parked, func([]byte) {
		if started.Add(1) == 1 {
			first.Store(time.Now().UnixNano())
		}
	})
	if err != nil {
		return Result{}, err
	}
	end, err := obs.untilEmpty(ctx, p.queue, func() bool { return started.Load() >= int64(p.n) })
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return Result{}, err
	}
	if s := started.Load(); s != int64(p.n) {
		return Result{}, fmt.Errorf("%d handler starts for %d jobs", s, p.n)
	}
	secs := float64(end-first.Load()) / 1e9
	return Result{Jobs: int64(p.n), Seconds: secs, PerSec: float64(p.n) / secs}, nil
}

// enqueue runs producers loops of one Enqueue each for the duration, then checks the server
// holds exactly the jobs counted.
func enqueue(ctx context.Context, b busAPI, p params) (Result, error) {
	var jobs atomic.Int64
	var first atomic.Pointer[error]
	body := payload(0)
	start := time.Now()
	until := start.Add(time.Duration(p.seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for range p.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) && first.Load() == nil {
				if err := b.Enqueue(ctx, p.queue, body); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				jobs.Add(1)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if e := first.Load(); e != nil {
		return Result{}, *e
	}
	obs, err := dialObserver(ctx, p.valkey)
	if err != nil {
		return Result{}, err
	}
	defer obs.close()
	held, err := obs.pending(ctx, p.queue)
	if err != nil {
		return Result{}, err
	}
	if held != jobs.Load() {
		return Result{}, fmt.Errorf("counted %d jobs enqueued, the server holds %d", jobs.Load(), held)
	}
	return Result{Jobs: jobs.Load(), Seconds: secs, PerSec: float64(jobs.Load()) / secs}, nil
}

// latency offers the rate for the duration, open loop: each job carries its intended send
// instant and its latency (to its handler's start) is counted from there, so a late sender
// cannot hide a wait; senders are a pool, so one slow enqueue does not hold the schedule.
func latency(ctx context.Context, b busAPI, p params) (Result, error) {
	n := int(p.rate * p.seconds)
	lat := make([]float64, 0, n)
	var mu sync.Mutex
	var received atomic.Int64
	stop, err := b.Consume(ctx, p.queue, p.workers, p.parked, func(body []byte) {
		d := float64(time.Now().UnixNano()-sentAt(body)) / 1e6
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		received.Add(1)
	})
	if err != nil {
		return Result{}, err
	}
	defer stop()
	time.Sleep(500 * time.Millisecond) // the consumer parks: start-up is not measured
	late, sent, secs, err := offer(ctx, b, p, n)
	if err != nil {
		return Result{}, err
	}
	for deadline := time.Now().Add(10 * time.Second); received.Load() < sent && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := stop(); err != nil {
		return Result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(len(lat)) < sent {
		return Result{}, fmt.Errorf("%d of %d jobs reached a handler", len(lat), sent)
	}
	return Result{Jobs: int64(len(lat)), Seconds: secs, PerSec: float64(sent) / secs, P50: quantile(lat, 0.5),
		P99: quantile(lat, 0.99), LateP99: quantile(late, 0.99), Sent: sent, Behind: secs > 1.1*p.seconds}, nil
}

// offer hands n jobs to p.producers senders, each at its instant; it returns how late each
// hand-off was (ms), the jobs sent and how long sending took.
func offer(ctx context.Context, b busAPI, p params, n int) ([]float64, int64, float64, error) {
	interval := time.Duration(float64(time.Second) / p.rate)
	todo := make(chan int64, n)
	late := make([][]float64, p.producers)
	var sent atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range p.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range todo {
				late[w] = append(late[w], float64(time.Now().UnixNano()-t)/1e6)
				if err := b.Enqueue(ctx, p.queue, payload(t)); err != nil {
					first.CompareAndSwap(nil, &err)
					continue
				}
				sent.Add(1)
			}
		}()
	}
	sl := newSleeper()
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		sl.until(at)
		if ctx.Err() != nil {
			break
		}
		todo <- at.UnixNano()
	}
	sl.stop()
	close(todo)
	wg.Wait()
	secs := time.Since(start).Seconds()
	if e := first.Load(); e != nil {
		return nil, 0, 0, *e
	}
	return slices.Concat(late...), sent.Load(), secs, nil
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
