package bench

import (
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Spread is the median of repeats with their range.
type Spread struct {
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Repeats []float64 `json:"repeats"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], Repeats: xs}
}

// latencyHist is a concurrent HdrHistogram of microseconds (1 µs .. 10 min, 3 digits).
type latencyHist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatencyHist() *latencyHist {
	return &latencyHist{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

func (l *latencyHist) record(d time.Duration) {
	us := max(d.Microseconds(), 1)
	l.mu.Lock()
	_ = l.h.RecordValue(min(us, l.h.HighestTrackableValue()))
	l.mu.Unlock()
}

// Percentile is one point of a latency distribution.
type Percentile struct {
	Q  float64 `json:"q"` // percentile, 0..100
	Ms float64 `json:"ms"`
}

// plotQuantiles are the points the SVG plot and the JSON carry.
var plotQuantiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}

func (l *latencyHist) summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := func(q float64) float64 {
		if q >= 100 {
			return float64(l.h.Max()) / 1000
		}
		return float64(l.h.ValueAtQuantile(q)) / 1000
	}
	out := Latency{Count: l.h.TotalCount(), P50: ms(50), P99: ms(99), P999: ms(99.9), Max: ms(100)}
	for _, q := range plotQuantiles {
		out.Percentiles = append(out.Percentiles, Percentile{Q: q, Ms: ms(q)})
	}
	return out
}

// Latency summarises one system's end-to-end latencies (milliseconds).
type Latency struct {
	Count       int64        `json:"count"`
	P50         float64      `json:"p50_ms"`
	P99         float64      `json:"p99_ms"`
	P999        float64      `json:"p999_ms"`
	Max         float64      `json:"max_ms"`
	Percentiles []Percentile `json:"percentiles"`
}
