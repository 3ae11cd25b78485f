package bus_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// BenchmarkEnqueueParallel: concurrent producers sharing the bus's auto-pipelined connection,
// one enqueue each (single) or coalesced by group commit into enqueue_batch (grouped).
func BenchmarkEnqueueParallel(b *testing.B) {
	b.Run("single", func(b *testing.B) { enqueueParallel(b, bus.Options{}) })
	b.Run("batched", func(b *testing.B) { enqueueParallel(b, bus.Options{BatchEnqueue: true}) })
}

func enqueueParallel(b *testing.B, opt bus.Options) {
	ctx, bb, q := context.Background(), openBus(b, addr, opt), qname(b)
	payload := []byte("0123456789abcdef")
	b.SetParallelism(16)
	cpu, calls := serverCPUOf(b, addr), scriptCallsOf(b, addr)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bb.Enqueue(ctx, q, payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(cpu()/float64(b.N), "server-µs/job")
	b.ReportMetric(calls()/float64(b.N), "scripts/job")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	inspect(b, addr).do("DEL", "emq:{"+q+"}:pending", "emq:{"+q+"}:wake")
}

// BenchmarkEnqueueBatch: one pipeline of 100 enqueues per call.
func BenchmarkEnqueueBatch(b *testing.B) {
	ctx, bb, q := context.Background(), openBus(b, addr, bus.Options{}), qname(b)
	msgs := make([]bus.Message, 100)
	for i := range msgs {
		msgs[i].Payload = []byte("0123456789abcdef")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range msgs {
			msgs[j].ID = ""
		}
		if _, err := bb.EnqueueBatch(ctx, q, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkDrain: a consumer draining b.N pre-enqueued jobs, claim + complete each.
func BenchmarkDrain(b *testing.B) {
	ctx, bb, q := context.Background(), openBus(b, addr, bus.Options{}), qname(b)
	msgs := make([]bus.Message, 1000)
	for left := b.N; left > 0; left -= len(msgs) {
		n := min(left, len(msgs))
		for j := range msgs[:n] {
			msgs[j] = bus.Message{Payload: []byte("x")}
		}
		if _, err := bb.EnqueueBatch(ctx, q, msgs[:n]); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	finished := make(chan struct{})
	c, _ := bb.Consumer(q, bus.ConsumerOptions{Concurrency: 64, Lease: bus.Ms(30 * time.Second), Maintain: -1, Park: time.Second},
		func(ctx context.Context, j *bus.Job) error {
			if done.Add(1) == int64(b.N) {
				close(finished)
			}
			return nil
		})
	runCtx, cancel := context.WithCancel(ctx)
	cpu, calls := serverCPUOf(b, addr), scriptCallsOf(b, addr)
	b.ReportAllocs()
	b.ResetTimer()
	ran := make(chan struct{})
	go func() { c.Run(runCtx); close(ran) }()
	<-finished
	cancel()
	<-ran
	b.StopTimer()
	b.ReportMetric(cpu()/float64(b.N), "server-µs/job")
	b.ReportMetric(calls()/float64(b.N), "scripts/job")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// scriptCallsOf reads the server's EVALSHA count now and returns a func giving the calls since.
func scriptCallsOf(b *testing.B, at string) func() float64 {
	in := inspect(b, at)
	read := func() float64 {
		for _, line := range strings.Split(in.do("INFO", "commandstats").Text(), "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
				n, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, ',')], 64)
				if err != nil {
					b.Fatalf("INFO commandstats %q: %v", line, err)
				}
				return n
			}
		}
		return 0
	}
	before := read()
	return func() float64 { return read() - before }
}

// serverCPUOf reads the server's CPU now and returns a func giving the µs spent since.
func serverCPUOf(b *testing.B, at string) func() float64 {
	r := &cpuRig{b: b, ctx: context.Background(), c: inspect(b, at).c}
	before := r.serverCPU()
	return func() float64 { return r.serverCPU() - before }
}
