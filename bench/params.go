package bench

import (
	"fmt"
	"time"
)

// Params size a run. Producers and Workers are equal by design so the Postgres commit ceiling
// measured at that concurrency applies to both.
type Params struct {
	Mode            string        `json:"mode"`
	Duration        time.Duration `json:"duration_ns"` // one timed repeat of an enqueue scenario
	Repeats         int           `json:"repeats"`
	Producers       int           `json:"producers"`
	Workers         int           `json:"workers"`
	Batch           int           `json:"batch"`
	Backlog         int           `json:"backlog"`
	Rate            float64       `json:"rate"` // offered jobs/s of the latency scenario
	LatencyDuration time.Duration `json:"latency_duration_ns"`
	Pipeline        int           `json:"pipeline"` // EVALSHAs per pipelined batch in the Valkey ceiling
}

// Modes: ci must finish in a few minutes on 2 cores; full repeats longer; tiny is for the
// report-structure test.
func ParamsFor(mode string) (Params, error) {
	switch mode {
	case "ci":
		return Params{Mode: mode, Duration: 1500 * time.Millisecond, Repeats: 3, Producers: 8, Workers: 8,
			Batch: 100, Backlog: 3000, Rate: 300, LatencyDuration: 4 * time.Second, Pipeline: 64}, nil
	case "full":
		return Params{Mode: mode, Duration: 5 * time.Second, Repeats: 5, Producers: 16, Workers: 16,
			Batch: 500, Backlog: 20000, Rate: 1000, LatencyDuration: 20 * time.Second, Pipeline: 64}, nil
	case "tiny":
		return Params{Mode: mode, Duration: 200 * time.Millisecond, Repeats: 1, Producers: 2, Workers: 2,
			Batch: 10, Backlog: 100, Rate: 50, LatencyDuration: time.Second, Pipeline: 16}, nil
	}
	return Params{}, fmt.Errorf("bench: unknown mode %q (want ci, full or tiny)", mode)
}
