package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/echomq/kit/bench/queue"
)

// The generator's ticker never wakes before a job's instant (an early hand-off would hide
// latency) and comes back at once for an instant already past.
func TestTickerIsNeverEarly(t *testing.T) {
	tk := newTicker()
	defer tk.stop()
	start := time.Now()
	for i := range 50 {
		at := start.Add(time.Duration(i) * 700 * time.Microsecond)
		if !tk.until(context.Background(), at) {
			t.Fatal("until returned false with a live context")
		}
		if now := time.Now(); now.Before(at) {
			t.Fatalf("tick %d woke %v early", i, at.Sub(now))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if tk.until(ctx, time.Now().Add(time.Hour)) {
		t.Error("until slept on a cancelled context")
	}
}

// BenchmarkGeneratorLateness prints how late each way of waking the open-loop generator hands a
// job over at 1000 jobs/s: the ticker (nanosleep on its own thread) against the runtime's timer.
func BenchmarkGeneratorLateness(b *testing.B) {
	for _, way := range []string{"ticker", "timer"} {
		b.Run(way, func(b *testing.B) {
			var late []float64
			for range b.N {
				late = append(late, lateness(way, 500)...)
			}
			slices.Sort(late)
			b.ReportMetric(late[len(late)/2], "p50-µs")
			b.ReportMetric(late[len(late)*99/100], "p99-µs")
		})
	}
}

// lateness wakes n times 1 ms apart and returns each wake's lateness in µs.
func lateness(way string, n int) []float64 {
	var tk *ticker
	if way == "ticker" {
		tk = newTicker()
		defer tk.stop()
	}
	out := make([]float64, 0, n)
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Millisecond)
		if tk != nil {
			tk.until(context.Background(), at)
		} else if w := time.Until(at); w > 0 {
			queue.Sleep(context.Background(), w)
		}
		out = append(out, float64(time.Since(at).Microseconds()))
	}
	return out
}
