package bench

import (
	"time"

	"github.com/echomq/kit/bench/baseline"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/scale"
)

// Report is everything one invocation measured.
type Report struct {
	Tool    string       `json:"tool"`
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
	Params  Params       `json:"params"`
	Machine Machine      `json:"machine"`
	Runs    []*Run       `json:"runs"`
	Scale   *scale.Axis  `json:"scale,omitempty"` // the drain across cluster primaries
	Systems []queue.Info `json:"systems"`         // every system opened, as it described itself
}

// Machine is where it ran.
type Machine struct {
	Cores      int     `json:"cores"`
	CPULimit   float64 `json:"cgroup_cpu_limit,omitempty"` // cores; 0: none found
	GOMAXPROCS int     `json:"gomaxprocs"`
	OS         string  `json:"os"`
	Arch       string  `json:"arch"`
	Go         string  `json:"go"`
}

// Run is one durability axis: its engines, ceilings and scenarios.
type Run struct {
	Axis      string               `json:"axis"`
	Engines   []EngineInfo         `json:"engines"`
	Ceilings  []Ceiling            `json:"ceilings"`
	Scenarios []*Scenario          `json:"scenarios"`
	Latency   *LatencyScenario     `json:"latency"`
	Tail      *Tail                `json:"bus_tail,omitempty"`    // where the bus's latency tail comes from
	Scripts   []measure.ScriptCost `json:"bus_scripts,omitempty"` // each drain script alone, Valkey's own timing
	Targets   []Target             `json:"targets"`
	Gate      []GateResult         `json:"gate,omitempty"`
	// Baseline is the bus against its baseline build (nil when the gate has no baseline check).
	Baseline *baseline.Result `json:"baseline_check,omitempty"`
	// GatePolicy is bench/gate.json's re-run policy, as judged, and GateMaxOutside its limit on
	// the machine's other work for a miss to count.
	GatePolicy     string   `json:"gate_policy,omitempty"`
	GateMaxOutside float64  `json:"gate_max_outside,omitempty"`
	Gaps           []string `json:"gaps"`
}

// EngineInfo is an engine as found: version, how obtained, the settings that decide durability.
type EngineInfo struct {
	Engine   queue.Engine `json:"engine"`
	Version  string       `json:"version"`
	Mode     string       `json:"mode"`
	Settings [][2]string  `json:"settings"`
}

// Ceiling is an engine's raw rate in this run.
type Ceiling struct {
	Name        string         `json:"name"`
	Engine      queue.Engine   `json:"engine"`
	What        string         `json:"what"`
	Concurrency int            `json:"concurrency"`
	Unit        string         `json:"unit"`
	Rate        measure.Spread `json:"rate"`
	CPU         *measure.CPU   `json:"cpu,omitempty"`
	Err         string         `json:"error,omitempty"`
}

// Scenario is one throughput scenario (for the backlog axis, one backlog size).
type Scenario struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Concurrency int       `json:"concurrency"`
	Batch       int       `json:"batch,omitempty"`
	Backlog     int       `json:"backlog,omitempty"` // drain and drain-backlog: jobs pre-filled
	Results     []*Result `json:"results"`
	Ratios      []Ratio   `json:"ratios"`
}

// Result is one system in one scenario.
type Result struct {
	System   string              `json:"system"`
	Engine   queue.Engine        `json:"engine"`
	JobsPerS measure.Spread      `json:"jobs_per_s"`
	Ceiling  string              `json:"ceiling"`
	Fraction float64             `json:"fraction_of_ceiling"`
	CPU      *measure.CPU        `json:"cpu,omitempty"`         // over every repeat
	Server   *measure.ServerTime `json:"valkey_time,omitempty"` // the bus only
	Startup  *measure.Spread     `json:"startup_ms,omitempty"`  // drain: call → first handler, outside the window
	Err      string              `json:"error,omitempty"`
}

// Ratio compares two systems' medians (or latencies).
type Ratio = measure.Ratio

// LatencyScenario is the open-loop end-to-end latency run.
type LatencyScenario struct {
	Name     string           `json:"name"`
	Title    string           `json:"title"`
	Rate     float64          `json:"rate"`
	Seconds  float64          `json:"seconds"` // one round
	Rounds   int              `json:"rounds"`
	Workers  int              `json:"workers"`
	Senders  int              `json:"senders"`
	Results  []*LatencyResult `json:"results"`
	Ratios   []Ratio          `json:"ratios"`
	PlotFile string           `json:"plot_file"`
}

// LatencyResult is one system's run of the latency scenario, over every round.
type LatencyResult struct {
	System      string          `json:"system"`
	Offered     int64           `json:"offered"`
	Sent        int64           `json:"sent"`
	Received    int64           `json:"received"`
	SendSeconds float64         `json:"send_seconds"`
	Latency     measure.Latency `json:"latency"` // every round's samples together
	// RoundP99 is each round's p99 (ms), and P99Median the median over the rounds that were
	// not saturated: the gate's figure.
	RoundP99  []float64 `json:"round_p99_ms,omitempty"`
	P99Median float64   `json:"p99_median_ms,omitempty"`
	// RoundSaturated marks the rounds whose offered rate was not offered (RoundBehind says why):
	// their p99 measures a queue that fell behind, not a latency. Saturated is set when most
	// rounds were, and then no latency ratio is taken against the system.
	RoundSaturated []bool   `json:"round_saturated,omitempty"`
	RoundBehind    []string `json:"round_behind,omitempty"`
	// RoundStartBusy is the share of the machine's cores the run's engines kept busy just before
	// each round, once the bench stopped waiting for the previous round's leftovers
	// (measure.Settler).
	RoundStartBusy []float64 `json:"round_start_busy,omitempty"`
	// RoundCPU is each round's CPU by party (CPU is all rounds together): a round slower than
	// its neighbours shows which party was busy through it.
	RoundCPU  []*measure.CPU `json:"round_cpu,omitempty"`
	Saturated bool           `json:"saturated,omitempty"`
	// Limit is what held the system's latency: for a saturated one, what fell behind; for the
	// others, how a waiting consumer learns of a new job, from the system's description.
	Limit string `json:"limit,omitempty"`
	// SenderLate is the load generator's lateness at the hand-off to Enqueue (already counted
	// inside Latency, for every system alike).
	SenderLate measure.Latency `json:"sender_late"`
	CPU        *measure.CPU    `json:"cpu,omitempty"`
	Err        string          `json:"error,omitempty"`
	// FirstTry marks a row of the scenario's first measurement kept beside a gate re-run that
	// measured only the systems its checks read.
	FirstTry bool `json:"first_try,omitempty"`
}

func (run *Run) scenario(name string) *Scenario {
	for _, s := range run.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Result finds a system's measured result (nil when it failed or is absent).
func (s *Scenario) Result(system string) *Result {
	if s == nil {
		return nil
	}
	for _, r := range s.Results {
		if r.System == system && r.Err == "" && r.JobsPerS.Median > 0 {
			return r
		}
	}
	return nil
}

// Scenario finds a throughput scenario by name (the first, for the backlog axis).
func (run *Run) Scenario(name string) *Scenario { return run.scenario(name) }

// Backlogs lists the backlog axis's scenarios, smallest first.
func (run *Run) Backlogs() []*Scenario {
	var out []*Scenario
	for _, s := range run.Scenarios {
		if s.Name == queue.DrainBacklog {
			out = append(out, s)
		}
	}
	return out
}

// LatencyOf finds a system's latency result with figures.
func (ls *LatencyScenario) LatencyOf(system string) *LatencyResult {
	if ls == nil {
		return nil
	}
	for _, r := range ls.Results {
		if r.System == system && r.Err == "" && r.Latency.Count > 0 {
			return r
		}
	}
	return nil
}

// Setting looks a setting up in an EngineInfo ("" when absent).
func (e EngineInfo) Setting(k string) string {
	for _, kv := range e.Settings {
		if kv[0] == k {
			return kv[1]
		}
	}
	return ""
}
