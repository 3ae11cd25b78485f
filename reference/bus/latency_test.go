package bus_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/echomq/kit/reference/bus"
)

// BenchmarkLatencyE2E offers b.N jobs at 1,000 jobs/s, open loop, from 64 senders (group
// enqueue on) to a consumer of 256 workers, all parked or 8 at a time, or of 8 workers (the
// bench's W=8 tail variant), and records enqueue → handler start counted from each job's
// intended send instant (a late sender cannot hide queueing delay). It is the bench's latency-e2e scenario for the bus alone:
// go test -run '^$' -bench LatencyE2E -benchtime 5000x ./reference/bus. The intended instants
// come from time.Sleep, which on Linux oversleeps by up to about 1 ms: that is in the figures.
func BenchmarkLatencyE2E(b *testing.B) {
	b.Run("parked=all", func(b *testing.B) { latencyE2E(b, 256, 0) })
	b.Run("parked=8", func(b *testing.B) { latencyE2E(b, 256, 8) })
	b.Run("workers=8", func(b *testing.B) { latencyE2E(b, 8, 8) })
}

func latencyE2E(b *testing.B, workers, parked int) {
	const rate, senders = 1000, 64
	ctx, bb, q := context.Background(), openBus(b, addr, bus.Options{BatchEnqueue: true}), qname(b)
	hist := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	var mu sync.Mutex
	var got atomic.Int64
	all := make(chan struct{})
	c, err := bb.Consumer(q, bus.ConsumerOptions{Concurrency: workers, Parked: parked, Lease: bus.Ms(30 * time.Second)},
		func(ctx context.Context, j *bus.Job) error {
			d := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(j.Payload))))
			mu.Lock()
			_ = hist.RecordValue(max(d.Microseconds(), 1))
			mu.Unlock()
			if got.Add(1) == int64(b.N) {
				close(all)
			}
			return nil
		})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { c.Run(runCtx); close(ran) }()
	defer func() { cancel(); <-ran }()
	time.Sleep(500 * time.Millisecond) // every worker parked: start-up is not measured

	todo := make(chan int64, b.N)
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := range todo {
				p := binary.BigEndian.AppendUint64(nil, uint64(at))
				if _, err := bb.Enqueue(ctx, q, p); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	b.ResetTimer()
	start := time.Now()
	interval := time.Second / rate
	for i := range b.N {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		todo <- at.UnixNano()
	}
	close(todo)
	wg.Wait()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		b.Fatalf("%d of %d jobs reached a handler", got.Load(), b.N)
	}
	b.StopTimer()
	ms := func(q float64) float64 { return float64(hist.ValueAtQuantile(q)) / 1000 }
	b.ReportMetric(ms(50), "p50-ms")
	b.ReportMetric(ms(99), "p99-ms")
	b.ReportMetric(ms(99.9), "p99.9-ms")
	b.ReportMetric(float64(hist.Max())/1000, "max-ms")
}
