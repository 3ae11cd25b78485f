package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/echomq/kit/bench/baseline"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// Gate is a committed set of thresholds on ratios measured within one run (bench/gate.json):
// absolute figures move with the machine, ratios of two systems on the same engines in the same
// minutes much less. A check names a scenario and one of its ratios ("bus/bullmq" of drain, "p99
// bus/bullmq" of latency-e2e) and a bound.
type Gate struct {
	Axis string `json:"axis"` // the axis the gate judges, "as-configured"
	// Policy is the gate's re-run policy in words, printed with the verdict; the code keeps it
	// (judge): a scenario with a miss is measured once more and judged on the new figures only.
	Policy string      `json:"policy"`
	Checks []GateCheck `json:"checks"`
	// Baseline is the check of the bus against itself: the working tree against the last
	// release (or BENCH_BASELINE), built from source and run interleaved (bench/baseline).
	Baseline *baseline.Spec `json:"baseline,omitempty"`
	// MaxOutside is the busiest machine the thresholds speak for (the share of its cores busy
	// with other work, as measured beside the figures; their bases are quiet runs). A check that
	// misses on its re-run with its scenario measured busier than this is NOT JUDGED, not FAIL:
	// a neighbour's load is no evidence against the bus. Zero: every miss fails.
	MaxOutside float64 `json:"max_outside,omitempty"`
	// MaxOutsideWhy is the reason for MaxOutside's value.
	MaxOutsideWhy string `json:"max_outside_why,omitempty"`
}

// GateCheck is one threshold. Exactly one of Min and Max is set.
type GateCheck struct {
	Scenario string   `json:"scenario"`
	Ratio    string   `json:"ratio"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	Why      string   `json:"why"`
	// Basis is where the threshold comes from: the spread of quiet runs and the margin kept.
	Basis string `json:"basis,omitempty"`
}

// GateResult is a check's verdict in this run.
type GateResult struct {
	GateCheck
	Value  float64 `json:"value"`
	Rival  string  `json:"rival,omitempty"` // the system a best-of ratio was computed against
	Found  bool    `json:"found"`
	Pass   bool    `json:"pass"`
	Reruns int     `json:"reruns"` // times the scenario was measured again after a first miss
	// Outside is the scenario's outside share as judged (the median over its systems). NotJudged
	// marks a miss that is no evidence against the bus, and NotJudgedWhy says which: a machine
	// busier than the gate's MaxOutside, or a rival the check names that could not keep up with
	// the offered rate (no latency of its own to compare with) while the bus did.
	Outside      *float64 `json:"outside,omitempty"`
	NotJudged    bool     `json:"not_judged,omitempty"`
	NotJudgedWhy string   `json:"not_judged_why,omitempty"`
}

// LoadGate reads and checks a gate file.
func LoadGate(path string) (*Gate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	var g Gate
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("gate %s: %w", path, err)
	}
	if g.Axis == "" {
		g.Axis = "as-configured"
	}
	for i, c := range g.Checks {
		if (c.Min == nil) == (c.Max == nil) || c.Scenario == "" || c.Ratio == "" {
			return nil, fmt.Errorf("gate %s: check %d: want a scenario, a ratio and exactly one of min and max", path, i+1)
		}
	}
	if g.Baseline != nil {
		if err := g.Baseline.Check(); err != nil {
			return nil, fmt.Errorf("gate %s: %w", path, err)
		}
	}
	return &g, nil
}

// ratioOf finds a scenario's ratio in run: throughput scenarios and the latency scenario alike.
func (run *Run) ratioOf(scenario, ratio string) (Ratio, bool) {
	var rs []Ratio
	if s := run.scenario(scenario); s != nil {
		rs = s.Ratios
	} else if run.Latency != nil && run.Latency.Name == scenario {
		rs = run.Latency.Ratios
	}
	for _, r := range rs {
		if r.Name == ratio {
			return r, true
		}
	}
	return Ratio{}, false
}

// Threshold prints the bound: "≥ 2.5" or "≤ 0.5".
func (c GateCheck) Threshold() string {
	if c.Min != nil {
		return fmt.Sprintf("≥ %g", *c.Min)
	}
	return fmt.Sprintf("≤ %g", *c.Max)
}

// Evaluate judges one check against run. A ratio that was not measured fails: a gate that
// cannot see its figure must not pass.
func (c GateCheck) Evaluate(run *Run) GateResult {
	r := GateResult{GateCheck: c}
	var ratio Ratio
	ratio, r.Found = run.ratioOf(c.Scenario, c.Ratio)
	r.Value, r.Rival = ratio.Value, ratio.Rival
	switch {
	case !r.Found:
	case c.Min != nil:
		r.Pass = r.Value >= *c.Min
	default:
		r.Pass = r.Value <= *c.Max
	}
	return r
}

// Passed reports whether no check failed: each passed or could not be judged.
func Passed(rs []GateResult) bool {
	for _, r := range rs {
		if !r.Pass && !r.NotJudged {
			return false
		}
	}
	return len(rs) > 0
}

// NotJudged counts the checks the machine was too busy to judge.
func NotJudged(rs []GateResult) int {
	n := 0
	for _, r := range rs {
		if r.NotJudged {
			n++
		}
	}
	return n
}

// GatePassed reports whether every axis the gate judged passed; a gate that judged nothing fails.
func (rep *Report) GatePassed() bool {
	judged := false
	for _, run := range rep.Runs {
		if len(run.Gate) == 0 && run.Baseline == nil {
			continue
		}
		judged = true
		if !run.GatePass() {
			return false
		}
	}
	return judged
}

// GateNotJudged names every check the machine was too busy to judge, one line each.
func (rep *Report) GateNotJudged() []string {
	var out []string
	for _, run := range rep.Runs {
		for _, r := range run.Gate {
			if r.NotJudged {
				out = append(out, fmt.Sprintf("%s: %s %s %s: %s", run.Axis, r.Scenario, r.Ratio, valueText(r), r.NotJudgedWhy))
			}
		}
	}
	return out
}

func valueText(r GateResult) string {
	if !r.Found {
		return "not measured"
	}
	return fmt.Sprintf("= %.3g, want %s", r.Value, r.Threshold())
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// GateFailures names every check that failed the gate, one line each, for the console: a red
// run says why where it is read, not only in bench.out.
func (rep *Report) GateFailures() []string {
	var out []string
	for _, run := range rep.Runs {
		for _, r := range run.Gate {
			if !r.Pass && !r.NotJudged {
				out = append(out, fmt.Sprintf("%s: %s %s %s (%d re-run; %.0f%% of the cores busy with other work)", run.Axis, r.Scenario, r.Ratio, valueText(r), r.Reruns, 100*deref(r.Outside)))
			}
		}
		if b := run.Baseline; b != nil && b.Status == baseline.Fail {
			out = append(out, fmt.Sprintf("%s: baseline check: %s", run.Axis, b.Why))
		}
	}
	return out
}

// GatePass is the axis's verdict: every ratio check passed, and the baseline check did not
// fail (NOT RUN, for want of a baseline, is printed as loudly but fails no correct tree).
func (run *Run) GatePass() bool {
	if len(run.Gate) > 0 && !Passed(run.Gate) {
		return false
	}
	return run.Baseline == nil || run.Baseline.Status != baseline.Fail
}

// Outside is the median share of the machine's cores busy with work not this run's, over every
// measurement that knows it: how loaded the machine was while the figures were taken.
func (rep *Report) Outside() float64 {
	var xs []float64
	for _, run := range rep.Runs {
		for _, c := range run.cpus() {
			if c != nil && c.Outside != nil {
				xs = append(xs, *c.Outside)
			}
		}
	}
	if rep.Scale != nil {
		for _, r := range rep.Scale.Results {
			if r.CPU != nil && r.CPU.Outside != nil {
				xs = append(xs, *r.CPU.Outside)
			}
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return measure.SpreadOf(xs).Median
}

// cpus lists the CPU accounting of every measurement of the run.
func (run *Run) cpus() []*measure.CPU {
	var out []*measure.CPU
	for _, c := range run.Ceilings {
		out = append(out, c.CPU)
	}
	for _, s := range run.Scenarios {
		for _, r := range s.Results {
			out = append(out, r.CPU)
		}
	}
	if run.Latency != nil {
		for _, r := range run.Latency.Results {
			out = append(out, r.CPU)
		}
	}
	return out
}

// judge evaluates the gate; a scenario with a failing check is measured once more (rerun) and
// its checks judged again on the new figures, so one noisy repeat cannot fail the gate alone.
func judge(g *Gate, run *Run, rerun func(scenario string)) []GateResult {
	eval := func() []GateResult {
		var rs []GateResult
		for _, c := range g.Checks {
			rs = append(rs, c.Evaluate(run))
		}
		return rs
	}
	rs := eval()
	again := map[string]bool{}
	for _, r := range rs {
		// A ratio not measured is measured once more too: a latency round saturated by a busy
		// moment leaves no ratio, and a second measurement may.
		if !r.Pass && !again[r.Scenario] {
			again[r.Scenario] = true
			rerun(r.Scenario)
		}
	}
	if len(again) > 0 {
		rs = eval()
	}
	for i := range rs {
		if again[rs[i].Scenario] {
			rs[i].Reruns = 1
		}
		share, ok := run.outsideOf(rs[i].Scenario)
		if ok {
			rs[i].Outside = &share
		}
		if rs[i].Pass {
			continue
		}
		if why := run.rivalSaturated(rs[i].Scenario, rs[i].Ratio); why != "" && !rs[i].Found {
			rs[i].NotJudged, rs[i].NotJudgedWhy = true, why
		} else if ok && g.MaxOutside > 0 && share > g.MaxOutside {
			rs[i].NotJudged, rs[i].NotJudgedWhy = true, fmt.Sprintf("%.0f%% of the cores busy with other work", 100*share)
		}
	}
	return rs
}

// rivalSaturated says why a latency ratio against one named rival was left unmeasured when the
// bus kept up and the rival did not ("": it was not that). Such a ratio is no evidence against
// the bus: the rival's rounds measured its backlog, and there is no latency of its own to
// compare with. A rival that failed (an error) is not this: a broken measurement fails.
func (run *Run) rivalSaturated(scenario, ratio string) string {
	name, ok := strings.CutPrefix(ratio, "p99 "+busq.Name+"/")
	if !ok {
		name, ok = strings.CutPrefix(ratio, "p50 "+busq.Name+"/")
	}
	if !ok || run.Latency == nil || run.Latency.Name != scenario {
		return ""
	}
	var bus, rival *LatencyResult
	for _, r := range run.Latency.Results {
		switch r.System {
		case busq.Name:
			bus = r
		case name:
			rival = r
		}
	}
	if bus == nil || bus.Err != "" || bus.Saturated || rival == nil || rival.Err != "" || !rival.Saturated {
		return ""
	}
	return fmt.Sprintf("%s could not be measured at the offered rate (%s)", name, rival.Limit)
}

// outsideOf is a scenario's outside share: the median over its systems' measurements.
func (run *Run) outsideOf(scenario string) (float64, bool) {
	var cpus []*measure.CPU
	if s := run.scenario(scenario); s != nil {
		for _, r := range s.Results {
			cpus = append(cpus, r.CPU)
		}
	} else if run.Latency != nil && run.Latency.Name == scenario {
		for _, r := range run.Latency.Results {
			cpus = append(cpus, r.CPU)
		}
	}
	var xs []float64
	for _, c := range cpus {
		if c != nil && c.Outside != nil {
			xs = append(xs, *c.Outside)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	return measure.SpreadOf(xs).Median, true
}

// reads names the systems scenario's checks read: the bus and each rival a ratio names, every
// system on an engine for a best-of ratio. Nil when a ratio is not of that form.
func (g *Gate) reads(scenario string, engines map[string]queue.Engine) map[string]bool {
	out := map[string]bool{}
	for _, c := range g.Checks {
		if c.Scenario != scenario {
			continue
		}
		pair := c.Ratio // "bus/x", or "p99 bus/x" (or p50)
		if _, after, ok := strings.Cut(pair, " "); ok {
			pair = after
		}
		a, b, ok := strings.Cut(pair, "/")
		if !ok {
			return nil
		}
		out[a] = true
		switch b {
		case BestValkey, BestPostgres:
			want := map[string]queue.Engine{BestValkey: queue.Valkey, BestPostgres: queue.Postgres}[b]
			for name, en := range engines {
				if en == want {
					out[name] = true
				}
			}
		default:
			out[b] = true
		}
	}
	return out
}
