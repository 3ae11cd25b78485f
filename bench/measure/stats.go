// Package measure is how the bench takes its figures: the median of repeats with its range, an
// HdrHistogram of latencies, and the CPU each party of a run kept busy.
package measure

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

// SpreadOf summarises repeats; the median of an even count is the mean of the middle two.
func SpreadOf(xs []float64) Spread {
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

// Hist is a concurrent HdrHistogram of microseconds (1 µs .. 10 min, 3 digits).
type Hist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// NewHist returns an empty histogram.
func NewHist() *Hist {
	return &Hist{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

// Record adds one latency (at least 1 µs).
func (l *Hist) Record(d time.Duration) {
	us := max(d.Microseconds(), 1)
	l.mu.Lock()
	_ = l.h.RecordValue(min(us, l.h.HighestTrackableValue()))
	l.mu.Unlock()
}

// RecordMicros adds latencies given in microseconds (a driven system's samples).
func (l *Hist) RecordMicros(us []float64) {
	for _, v := range us {
		l.Record(time.Duration(v * float64(time.Microsecond)))
	}
}

// Merge adds every value of o.
func (l *Hist) Merge(o *Hist) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Merge(o.h)
}

// Percentile is one point of a latency distribution.
type Percentile struct {
	Q  float64 `json:"q"` // percentile, 0..100
	Ms float64 `json:"ms"`
}

// PlotQuantiles are the points the plot and the JSON carry.
var PlotQuantiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100}

// Summary is the histogram's percentiles.
func (l *Hist) Summary() Latency {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := func(q float64) float64 {
		if q >= 100 {
			return float64(l.h.Max()) / 1000
		}
		return float64(l.h.ValueAtQuantile(q)) / 1000
	}
	out := Latency{Count: l.h.TotalCount(), P50: ms(50), P99: ms(99), P999: ms(99.9), Max: ms(100)}
	if out.Count == 0 {
		return out
	}
	for _, q := range PlotQuantiles {
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

// Ratio compares two figures of one run (two systems' medians, two latencies).
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Rival is the system a best-of ratio ("bus/best-postgres") was computed against this run.
	Rival string `json:"rival,omitempty"`
}
