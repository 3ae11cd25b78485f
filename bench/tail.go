package bench

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// Tail is where the bus's end-to-end tail comes from, measured in the latency scenario's own
// rounds (open loop, the same rate) with four stamps per job: its intended instant (t0), the
// hand-off to Enqueue (t1), Enqueue's return (t2) and the handler's start (t3); beside them the
// bench process's GC pauses and goroutine scheduling delays and Valkey's own command times,
// and three variant rounds that take one suspect away each.
type Tail struct {
	Samples int64 `json:"samples"`
	// Over every sample: sender late (t1−t0), the Enqueue call (t2−t1), Enqueue's call to the
	// handler's start (t3−t1: the bus's own path: enqueue script, wake, claim, dispatch).
	SenderLate Pcts `json:"sender_late"`
	Call       Pcts `json:"enqueue_call"`
	Path       Pcts `json:"path"`
	// Slowest is the slowest 1% of jobs (latency ≥ p99): the median of each part among them.
	Slowest Slowest `json:"slowest"`
	// The bench process during the rounds (runtime/metrics): GC cycles and pauses, and how long
	// runnable goroutines waited for a core.
	GCCycles     int64   `json:"gc_cycles"`
	GCPauseMaxMs float64 `json:"gc_pause_max_ms"`
	GCPauseTotal float64 `json:"gc_pause_total_ms"`
	SchedP99Ms   float64 `json:"sched_p99_ms"`
	SchedMaxMs   float64 `json:"sched_max_ms"`
	// Valkey's own per-command latency (INFO latencystats, µs): the server's part.
	Server [][2]string `json:"valkey_latencystats"`
	// Stalls are Valkey's latency-monitor events of 1 ms or more over the bus's rounds (LATENCY
	// LATEST): a "fast-command" among them is the server's thread kept off its CPU.
	Stalls [][2]string `json:"valkey_stalls,omitempty"`
	// Variants: the same round with one suspect removed (fewer workers; no GC; no enqueue batcher).
	Variants []TailVariant `json:"variants"`
}

// Pcts is a part's p50 and p99 in milliseconds.
type Pcts struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// Slowest is the slowest 1% of jobs, each part's median among them (ms).
type Slowest struct {
	N          int     `json:"n"`
	Latency    float64 `json:"latency_ms"`
	SenderLate float64 `json:"sender_late_ms"`
	Call       float64 `json:"enqueue_call_ms"`
	Path       float64 `json:"path_ms"`
}

// TailVariant is one variant round of the bus.
type TailVariant struct {
	Name       string  `json:"name"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	SenderLate float64 `json:"sender_late_p99_ms"`
	Err        string  `json:"error,omitempty"`
}

// stamps are one round's per-job instants (unix nanos), indexed by the job's place in the
// schedule.
type stamps struct {
	start, interval atomic.Int64 // set by the generator, read by the handlers
	t1, t2, t3      []int64
}

func newStamps(n int64) *stamps {
	return &stamps{t1: make([]int64, n), t2: make([]int64, n), t3: make([]int64, n)}
}

// index finds a job's place from its intended instant.
func (s *stamps) index(t int64) int {
	if s == nil {
		return -1
	}
	start, interval := s.start.Load(), s.interval.Load()
	if interval == 0 {
		return -1
	}
	i := int((t - start + interval/2) / interval)
	if i < 0 || i >= len(s.t1) {
		return -1
	}
	return i
}

// tailAcc gathers the bus's rounds into a Tail.
type tailAcc struct {
	late, call, path, lat []float64 // ms, one per job
	m0                    []metrics.Sample
	gcCycles              int64
	pauses, sched         *metrics.Float64Histogram
	server, stalls        [][2]string
}

var tailMetrics = []string{"/gc/cycles/total:gc-cycles", "/gc/pauses:seconds", "/sched/latencies:seconds"}

func readMetrics() []metrics.Sample {
	ms := make([]metrics.Sample, len(tailMetrics))
	for i, n := range tailMetrics {
		ms[i].Name = n
	}
	metrics.Read(ms)
	return ms
}

// begin marks the start of one bus round; end folds the round's stamps and metrics in.
func (a *tailAcc) begin() { a.m0 = readMetrics() }

func (a *tailAcc) end(s *stamps) {
	m1 := readMetrics()
	if a.m0 != nil && m1[0].Value.Kind() == metrics.KindUint64 {
		a.gcCycles += int64(m1[0].Value.Uint64() - a.m0[0].Value.Uint64())
		a.pauses = addHist(a.pauses, diffHist(a.m0[1].Value.Float64Histogram(), m1[1].Value.Float64Histogram()))
		a.sched = addHist(a.sched, diffHist(a.m0[2].Value.Float64Histogram(), m1[2].Value.Float64Histogram()))
	}
	start, interval := s.start.Load(), s.interval.Load()
	for i := range s.t1 {
		t0 := start + int64(i)*interval
		if s.t1[i] == 0 || s.t2[i] == 0 || s.t3[i] == 0 {
			continue
		}
		ms := func(a, b int64) float64 { return float64(b-a) / 1e6 }
		a.late, a.call = append(a.late, ms(t0, s.t1[i])), append(a.call, ms(s.t1[i], s.t2[i]))
		a.path, a.lat = append(a.path, ms(s.t1[i], s.t3[i])), append(a.lat, ms(t0, s.t3[i]))
	}
}

func diffHist(a, b *metrics.Float64Histogram) *metrics.Float64Histogram {
	d := &metrics.Float64Histogram{Buckets: b.Buckets, Counts: slices.Clone(b.Counts)}
	for i := range d.Counts {
		if i < len(a.Counts) {
			d.Counts[i] -= a.Counts[i]
		}
	}
	return d
}

func addHist(a, b *metrics.Float64Histogram) *metrics.Float64Histogram {
	if a == nil {
		return b
	}
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	return a
}

// histQuantile is the upper bound (ms) of the bucket holding quantile q; histMax the highest
// non-empty bucket's; histSum approximates the total (ms) by bucket lower bounds.
func histQuantile(h *metrics.Float64Histogram, q float64) float64 {
	if h == nil {
		return 0
	}
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen > want || seen == total {
			return bound(h.Buckets[i+1]) * 1e3
		}
	}
	return 0
}

func histSum(h *metrics.Float64Histogram) float64 {
	sum := 0.0
	if h == nil {
		return 0
	}
	for i, c := range h.Counts {
		sum += float64(c) * max(bound(h.Buckets[i]), 0) * 1e3
	}
	return sum
}

func bound(v float64) float64 {
	if v > 1e9 || v < -1e9 { // ±Inf at the ends
		return 0
	}
	return v
}

// tail turns the rounds into the breakdown.
func (a *tailAcc) tail() *Tail {
	if len(a.lat) == 0 {
		return nil
	}
	t := &Tail{Samples: int64(len(a.lat)), SenderLate: pcts(a.late), Call: pcts(a.call), Path: pcts(a.path),
		GCCycles: a.gcCycles, GCPauseMaxMs: histQuantile(a.pauses, 1), GCPauseTotal: histSum(a.pauses),
		SchedP99Ms: histQuantile(a.sched, 0.99), SchedMaxMs: histQuantile(a.sched, 1)}
	p99 := quantile(a.lat, 0.99)
	var late, call, path, lat []float64
	for i, l := range a.lat {
		if l >= p99 {
			late, call, path, lat = append(late, a.late[i]), append(call, a.call[i]), append(path, a.path[i]), append(lat, l)
		}
	}
	t.Slowest = Slowest{N: len(lat), Latency: quantile(lat, 0.5), SenderLate: quantile(late, 0.5), Call: quantile(call, 0.5), Path: quantile(path, 0.5)}
	return t
}

func pcts(xs []float64) Pcts { return Pcts{P50: quantile(xs, 0.5), P99: quantile(xs, 0.99)} }

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// tailVariants runs the bus's variant rounds: W = Parked (every idle worker parked on the wake
// key, no in-process queue of idle goroutines) and the GC off for the round.
func (e *env) tailVariants(ctx context.Context, t *Tail) {
	if e.bus == nil {
		return
	}
	few := min(e.p.Workers, busq.Parked)
	for _, v := range []struct {
		name    string
		workers int
		noGC    bool
		plain   bool
	}{
		{name: "W=" + itoa(few) + " (every worker parked; the scenario's W is " + itoa(e.p.Workers) + ")", workers: few},
		{name: "GC off in the bench process for the round", workers: e.p.Workers, noGC: true},
		{name: "BatchEnqueue off (each Enqueue its own script call, no batcher hop)", workers: e.p.Workers, plain: true},
	} {
		tv := TailVariant{Name: v.name}
		s, err := e.variantRound(ctx, v.workers, v.noGC, v.plain)
		if err != nil {
			tv.Err = err.Error()
		} else {
			h, late := measure.NewHist(), measure.NewHist()
			h.RecordMicros(s.LatencyUS)
			late.RecordMicros(s.LateUS)
			sum := h.Summary()
			tv.P50, tv.P99, tv.SenderLate = sum.P50, sum.P99, late.Summary().P99
		}
		e.progress("latency tail variant %s: p50 %.2fms p99 %.2fms", v.name, tv.P50, tv.P99)
		t.Variants = append(t.Variants, tv)
	}
}

// variantRound is one latency round of the bus with one suspect taken away.
func (e *env) variantRound(ctx context.Context, workers int, noGC, plain bool) (queue.Samples, error) {
	q := e.bus
	if plain {
		b, err := busq.OpenPlain(ctx, e.vk.Addr, e.pool, Schema, rows)
		if err != nil {
			return queue.Samples{}, err
		}
		defer b.Close()
		q = b
	}
	if err := q.Reset(ctx); err != nil {
		return queue.Samples{}, err
	}
	if noGC {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	return e.openLoopWith(ctx, q, workers, e.p.LatencyDuration, nil)
}

func itoa(n int) string { return strconv.Itoa(n) }
