package bench

import (
	"fmt"

	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/bench/systems/nodeq"
	"github.com/echomq/kit/bench/systems/obanq"
	"github.com/echomq/kit/bench/systems/riverq"
)

// Target is one of the bench's performance goals, checked against this run's medians.
type Target struct {
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Met      bool    `json:"met"`
	Value    float64 `json:"value"`
}

const missing = "not measured"

// Verdict is how a report prints the target: MET, NOT MET, or NOT RUN when this run did not
// measure its figure (a scenario or a system left out), which is not met either.
func (t Target) Verdict() string {
	switch {
	case t.Met:
		return "MET"
	case t.Measured == missing:
		return "NOT RUN"
	}
	return "NOT MET"
}

// Targets checks the performance goals against one run. A goal whose figure is missing is not met.
func Targets(rep *Report, run *Run) []Target {
	var out []Target
	add := func(goal string, ok bool, v float64, measured string) {
		out = append(out, Target{Goal: goal, Measured: measured, Met: ok, Value: v})
	}
	drain := run.scenario(queue.Drain)
	bus := drain.Result(busq.Name)
	if bus != nil {
		add("bus drain ≥ 50000 jobs/s", bus.JobsPerS.Median >= 50000, bus.JobsPerS.Median, fmt.Sprintf("%.0f jobs/s", bus.JobsPerS.Median))
	} else {
		add("bus drain ≥ 50000 jobs/s", false, 0, missing)
	}
	// The drain past the round-trip bound: the scripts it ran fill at least 85% of its window,
	// i.e. it reaches 85% of what its own scripts, at the batch sizes it ran them, allow on one
	// Valkey thread (1e6 ÷ their µs per job).
	goal := "bus drain ≥ 85% of its scripts' ceiling at its own batch sizes (scripts fill ≥ 85% of the window)"
	if bus != nil && bus.Server != nil && bus.Server.UsecPerJob > 0 {
		ceil := 1e6 / bus.Server.UsecPerJob
		add(goal, bus.Server.ScriptShare >= 0.85, bus.Server.ScriptShare, fmt.Sprintf("%.0f%% (%.0f jobs/s of %.0f at %.2f µs of script per job)",
			100*bus.Server.ScriptShare, bus.JobsPerS.Median, ceil, bus.Server.UsecPerJob))
	} else {
		add(goal, false, 0, missing)
	}
	for _, o := range []struct {
		name string
		x    float64
	}{{nodeq.BullMQ, 3}, {riverq.Name, 2.5}, {obanq.Name, 10}} {
		goal := fmt.Sprintf("bus drain ≥ %g× %s", o.x, o.name)
		r := drain.Result(o.name)
		if bus == nil || r == nil {
			add(goal, false, 0, missing)
			continue
		}
		v := bus.JobsPerS.Median / r.JobsPerS.Median
		add(goal, v >= o.x, v, fmt.Sprintf("%.2f× (%.0f vs %.0f jobs/s)", v, bus.JobsPerS.Median, r.JobsPerS.Median))
	}
	if e := run.scenario(queue.EnqueueConc).Result(busq.Name); e != nil {
		add(fmt.Sprintf("bus enqueue ≥ 100000 jobs/s from %d concurrent producers", rep.Params.Producers), e.JobsPerS.Median >= 100000, e.JobsPerS.Median, fmt.Sprintf("%.0f jobs/s", e.JobsPerS.Median))
	} else {
		add("bus enqueue ≥ 100000 jobs/s from concurrent producers", false, 0, missing)
	}
	goal = "bus end-to-end p99 ≤ 1 ms at 1000 jobs/s offered (the median of the rounds' p99s)"
	lat := run.Latency.LatencyOf(busq.Name)
	switch {
	case lat == nil || lat.Saturated || lat.P99Median <= 0:
		add(goal, false, 0, missing)
	case run.Latency.Rate != 1000:
		add(goal, false, lat.P99Median, fmt.Sprintf("p99 %.2f ms, but at %.0f jobs/s offered: not the target's rate", lat.P99Median, run.Latency.Rate))
	default:
		add(goal, lat.P99Median <= 1, lat.P99Median, fmt.Sprintf("p99 %.2f ms, median of the rounds (%.2f ms over every round's %d jobs together)",
			lat.P99Median, lat.Latency.P99, lat.Latency.Count))
	}
	goal = "valkey script time per drained job (claim_batch + complete_batch) ≤ 8 µs"
	if cl, co := run.ScriptCost("claim_batch"), run.ScriptCost("complete_batch"); cl > 0 && co > 0 {
		add(goal, cl+co <= 8, cl+co, fmt.Sprintf("%.2f µs (claim_batch %.2f + complete_batch %.2f)", cl+co, cl, co))
	} else {
		add(goal, false, 0, missing)
	}
	return out
}

// ScriptCost is a bus script's µs per job in the run's profile (0 when absent).
func (run *Run) ScriptCost(name string) float64 {
	for _, c := range run.Scripts {
		if c.Script == name {
			return c.UsecPerJob
		}
	}
	return 0
}
