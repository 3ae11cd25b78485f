package bench

import (
	"errors"
	"fmt"
	"time"
)

// Params size a run. Every system gets the same Producers, Workers and Postgres pool: the
// conditions are printed with the figures.
type Params struct {
	Mode            string        `json:"mode"`
	Duration        time.Duration `json:"duration_ns"` // one timed repeat of an enqueue scenario or ceiling
	Repeats         int           `json:"repeats"`
	Producers       int           `json:"producers"` // N: concurrent producers, ceiling clients, latency senders
	Workers         int           `json:"workers"`   // W: each system's worker slots (drain, latency)
	PGPool          int           `json:"pg_pool"`   // connections of the one pgx pool every Postgres system shares
	Batch           int           `json:"batch"`
	Backlog         int           `json:"backlog"`
	Rate            float64       `json:"rate"`                // offered jobs/s of the latency scenario
	LatencyDuration time.Duration `json:"latency_duration_ns"` // one round
	// LatencyRounds interleave the systems; each system's p99 is also taken per round and the
	// gate reads the median of the rounds' p99s.
	LatencyRounds int `json:"latency_rounds"`
	// WarmUp is one unmeasured round per system before its measured ones (0: none).
	WarmUp time.Duration `json:"latency_warm_up_ns,omitempty"`
	// BacklogSizes is the backlog axis: the drain at each size, one round each.
	BacklogSizes []int `json:"backlog_sizes,omitempty"`
	Pipeline     int   `json:"pipeline"` // EVALSHAs per pipelined batch in the Valkey ceiling
	// The scale axis: cluster sizes (primaries) drained beside a standalone Valkey, and queues
	// per primary; none when ScalePrimaries is empty.
	ScalePrimaries []int `json:"scale_primaries,omitempty"`
	ScaleQueues    int   `json:"scale_queues_per_primary,omitempty"`
}

// ParamsFor returns a mode's sizes. ci must finish in a few minutes on 2 cores; full repeats
// longer on a larger backlog; tiny is the smoke size of the report-structure test. Workers is
// in the range River's authors found best for throughput (riverbench: "roughly 1k"), scaled to
// two cores; the same W is every system's concurrency.
func ParamsFor(mode string) (Params, error) {
	switch mode {
	case "ci":
		return Params{Mode: mode, Duration: time.Second, Repeats: 3, Producers: 64, Workers: 256, PGPool: 32,
			Batch: 500, Backlog: 20000, Rate: 1000, LatencyDuration: 3 * time.Second, LatencyRounds: 5, WarmUp: 2 * time.Second, Pipeline: 64,
			BacklogSizes: []int{10000, 50000}, ScalePrimaries: []int{1, 2, 3}, ScaleQueues: 4}, nil
	case "full":
		return Params{Mode: mode, Duration: 5 * time.Second, Repeats: 5, Producers: 64, Workers: 256, PGPool: 32,
			Batch: 500, Backlog: 100000, Rate: 1000, LatencyDuration: 6 * time.Second, LatencyRounds: 5, WarmUp: 2 * time.Second, Pipeline: 64,
			BacklogSizes: []int{10000, 100000, 1000000}, ScalePrimaries: []int{1, 2, 3}, ScaleQueues: 4}, nil
	case "tiny":
		return Params{Mode: mode, Duration: 200 * time.Millisecond, Repeats: 1, Producers: 4, Workers: 8, PGPool: 8,
			Batch: 10, Backlog: 200, Rate: 200, LatencyDuration: time.Second, LatencyRounds: 2, Pipeline: 16,
			BacklogSizes: []int{100, 400}, ScalePrimaries: []int{1, 2, 3}, ScaleQueues: 4}, nil
	}
	return Params{}, fmt.Errorf("%w: unknown mode %q (want ci, full or tiny)", ErrParams, mode)
}

// ErrParams marks a bad mode or override.
var ErrParams = errors.New("bench: bad parameters")

// Overrides replace a mode's sizes; zero leaves one as the mode has it.
type Overrides struct {
	Producers, Workers, PGPool, Backlog, Batch int
	Rate                                       float64
}

// Apply returns p with o's non-zero fields, refusing negative ones.
func (o Overrides) Apply(p Params) (Params, error) {
	for name, v := range map[string]float64{"producers": float64(o.Producers), "workers": float64(o.Workers),
		"pg-pool": float64(o.PGPool), "backlog": float64(o.Backlog), "batch": float64(o.Batch), "rate": o.Rate} {
		if v < 0 {
			return p, fmt.Errorf("%w: %s %v: want a positive number", ErrParams, name, v)
		}
	}
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&p.Producers, o.Producers)
	set(&p.Workers, o.Workers)
	set(&p.PGPool, o.PGPool)
	set(&p.Backlog, o.Backlog)
	set(&p.Batch, o.Batch)
	if o.Rate > 0 {
		p.Rate = o.Rate
	}
	if p.PGPool > 90 {
		// Each Node.js system holds pools of its own beside the shared one, within the bench
		// PostgreSQL's max_connections (pgMaxConnections).
		return p, fmt.Errorf("%w: pg-pool %d: at most 90", ErrParams, p.PGPool)
	}
	return p, nil
}
