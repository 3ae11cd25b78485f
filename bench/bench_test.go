package bench

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/bench/systems/nodeq"
	"github.com/echomq/kit/bench/systems/obanq"
	"github.com/echomq/kit/bench/systems/riverq"
)

func TestParamsFor(t *testing.T) {
	for _, m := range []string{"ci", "full", "tiny"} {
		p, err := ParamsFor(m)
		if err != nil || p.Repeats < 1 || p.Producers < 1 || p.Workers < 1 || p.PGPool < 1 || p.PGPool > 90 {
			t.Errorf("%s: %+v %v", m, p, err)
		}
	}
	for _, m := range []string{"ci", "full"} {
		if p, _ := ParamsFor(m); p.Rate != 1000 {
			t.Errorf("%s: latency offered at %v jobs/s; issue 5 asks for 1000", m, p.Rate)
		}
	}
	if _, err := ParamsFor("x"); !errors.Is(err, ErrParams) {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestOverrides(t *testing.T) {
	p, _ := ParamsFor("ci")
	got, err := Overrides{Workers: 7, Rate: 50}.Apply(p)
	if err != nil || got.Workers != 7 || got.Rate != 50 || got.Producers != p.Producers {
		t.Errorf("apply: %+v %v", got, err)
	}
	for _, o := range []Overrides{{Workers: -1}, {Rate: -2}, {PGPool: 91}} {
		if _, err := o.Apply(p); !errors.Is(err, ErrParams) {
			t.Errorf("%+v accepted: %v", o, err)
		}
	}
}

func TestTargetsNeedFigures(t *testing.T) {
	p, _ := ParamsFor("ci")
	rep := &Report{Params: p}
	run := &Run{}
	ts := Targets(rep, run)
	if len(ts) != 8 {
		t.Fatalf("%d targets", len(ts))
	}
	for _, x := range ts {
		if x.Met {
			t.Errorf("%s met without a figure", x.Goal)
		}
	}
	res := func(sys string, v float64) *Result { return &Result{System: sys, JobsPerS: measure.Spread{Median: v}} }
	bus := res(busq.Name, 60000)
	bus.Server = &measure.ServerTime{UsecPerJob: 12.5, ScriptShare: 0.75} // 75% of the 80k its scripts allow
	run.Scenarios = []*Scenario{
		{Name: queue.Drain, Results: []*Result{res(obanq.Name, 1000), res(riverq.Name, 4000), bus, res(nodeq.BullMQ, 25000)}},
		{Name: queue.EnqueueConc, Results: []*Result{res(busq.Name, 90000)}},
	}
	// Over every round the p99 is 1.4 ms, the median of the rounds' p99s 0.9: the target reads the latter.
	run.Latency = &LatencyScenario{Rate: 1000, Results: []*LatencyResult{{System: busq.Name, Latency: measure.Latency{Count: 1, P99: 1.4}, P99Median: 0.9}}}
	run.Scripts = []measure.ScriptCost{{Script: "claim_batch", UsecPerJob: 5}, {Script: "complete_batch", UsecPerJob: 4}}
	met := map[string]bool{}
	for _, x := range Targets(rep, run) {
		met[x.Goal] = x.Met
	}
	want := map[string]bool{"bus drain ≥ 50000 jobs/s": true, "bus drain ≥ 2.5× river": true, "bus drain ≥ 10× oban-shaped": true,
		"bus drain ≥ 3× bullmq": false, "bus enqueue ≥ 100000 jobs/s from 64 concurrent producers": false,
		"bus end-to-end p99 ≤ 1 ms at 1000 jobs/s offered (the median of the rounds' p99s)":                 true,
		"valkey script time per drained job (claim_batch + complete_batch) ≤ 8 µs":                          false,
		"bus drain ≥ 85% of its scripts' ceiling at its own batch sizes (scripts fill ≥ 85% of the window)": false}
	for g, w := range want {
		if got, ok := met[g]; !ok || got != w {
			t.Errorf("%s: met=%v (present %v), want %v", g, got, ok, w)
		}
	}
}

// The gate can fail: a ratio under its minimum, over its maximum, or not measured at all fails;
// a miss is measured once more and judged on the new figures.
func TestGateCanFail(t *testing.T) {
	two, half := 2.5, 0.5
	g := &Gate{Axis: "as-configured", Checks: []GateCheck{
		{Scenario: queue.Drain, Ratio: "bus/bullmq", Min: &two},
		{Scenario: queue.Latency, Ratio: "p99 bus/bullmq", Max: &half},
		{Scenario: queue.Drain, Ratio: "bus/" + BestValkey, Min: &two},
	}}
	res := func(sys string, v float64) *Result {
		return &Result{System: sys, Engine: queue.Valkey, JobsPerS: measure.Spread{Median: v}}
	}
	run := &Run{Scenarios: []*Scenario{{Name: queue.Drain, Results: []*Result{res(busq.Name, 40000), res(nodeq.BullMQ, 20000)}}}}
	run.Scenarios[0].Ratios = ratios(run.Scenarios[0].Results, nil)
	reruns := 0
	rs := judge(g, run, func(string) { reruns++ })
	if Passed(rs) || rs[0].Pass || rs[1].Found || rs[1].Pass || reruns != 2 || rs[0].Reruns != 1 || rs[1].Reruns != 1 {
		t.Fatalf("a 2.0 ratio against ≥ 2.5 and a missing latency passed or were not each re-run once: %+v (reruns %d)", rs, reruns)
	}
	if rs[2].Pass || !rs[2].Found || rs[2].Rival != nodeq.BullMQ {
		t.Fatalf("the best Valkey rival at 2.0 against ≥ 2.5 passed: %+v", rs[2])
	}
	// The re-run measures better: the check passes on the new figures.
	rs = judge(g, run, func(string) {
		run.Scenarios[0].Results[0].JobsPerS.Median = 60000
		run.Scenarios[0].Ratios = ratios(run.Scenarios[0].Results, nil)
	})
	if !rs[0].Pass || rs[0].Reruns != 1 {
		t.Fatalf("the re-run's figure was not judged: %+v", rs[0])
	}
	run.Latency = &LatencyScenario{Name: queue.Latency, Ratios: []Ratio{{Name: "p99 bus/bullmq", Value: 0.7}}}
	if r := g.Checks[1].Evaluate(run); r.Pass || !r.Found {
		t.Fatalf("p99 ratio 0.7 against ≤ 0.5: %+v", r)
	}
	run.Latency.Ratios[0].Value = 0.3
	if r := g.Checks[1].Evaluate(run); !r.Pass {
		t.Fatalf("p99 ratio 0.3 against ≤ 0.5: %+v", r)
	}
	if _, err := LoadGate("gate.json"); err != nil {
		t.Fatalf("the committed gate does not load: %v", err)
	}
}

// A miss on a machine busier than the gate's limit is NOT JUDGED, not FAIL (a neighbour's load is
// no evidence against the bus), and the same miss on a quiet machine fails; a pass stays a pass.
func TestBusyMachineIsNotJudged(t *testing.T) {
	two := 2.5
	g := &Gate{Axis: "as-configured", MaxOutside: 0.15, Checks: []GateCheck{{Scenario: queue.Drain, Ratio: "bus/bullmq", Min: &two}}}
	run := func(bus, outside float64) *Run {
		cpu := &measure.CPU{Outside: &outside}
		s := &Scenario{Name: queue.Drain, Results: []*Result{
			{System: busq.Name, Engine: queue.Valkey, JobsPerS: measure.Spread{Median: bus}, CPU: cpu},
			{System: nodeq.BullMQ, Engine: queue.Valkey, JobsPerS: measure.Spread{Median: 20000}, CPU: cpu}}}
		s.Ratios = ratios(s.Results, nil)
		return &Run{Scenarios: []*Scenario{s}}
	}
	for _, c := range []struct {
		name                string
		bus, outside        float64
		pass, notJudged, ok bool
	}{
		{"a miss, busy", 40000, 0.40, false, true, true},
		{"a miss, quiet", 40000, 0.05, false, false, false},
		{"a miss at the limit", 40000, 0.15, false, false, false},
		{"a pass, busy", 60000, 0.40, true, false, true},
	} {
		rs := judge(g, run(c.bus, c.outside), func(string) {})
		if rs[0].Pass != c.pass || rs[0].NotJudged != c.notJudged || Passed(rs) != c.ok || rs[0].Outside == nil || *rs[0].Outside != c.outside {
			t.Errorf("%s: %+v, Passed %v; want pass %v, not judged %v, Passed %v", c.name, rs[0], Passed(rs), c.pass, c.notJudged, c.ok)
		}
	}
	g.MaxOutside = 0 // no limit: every miss fails
	if rs := judge(g, run(40000, 0.9), func(string) {}); Passed(rs) || rs[0].NotJudged {
		t.Errorf("without a limit a busy miss must fail: %+v", rs[0])
	}
}

// A latency ratio left unmeasured because the rival it names could not keep up with the offered
// rate is NOT JUDGED when the bus kept up (the rival has no latency to compare with), and fails
// when the bus saturated too, when the rival failed, or when the check names a best-of rival.
func TestSaturatedRivalIsNotJudged(t *testing.T) {
	seven := 0.7
	g := &Gate{Axis: "as-configured", MaxOutside: 0.15, Checks: []GateCheck{
		{Scenario: queue.Latency, Ratio: "p99 bus/bullmq", Max: &seven},
		{Scenario: queue.Latency, Ratio: "p99 bus/" + BestValkey, Max: &seven}}}
	quiet := 0.01
	run := func(busSat, rivalSat bool, rivalErr string) *Run {
		cpu := &measure.CPU{Outside: &quiet}
		rs := []*LatencyResult{
			{System: busq.Name, Latency: measure.Latency{Count: 100, P50: 0.4}, P99Median: 2, Saturated: busSat, CPU: cpu},
			{System: nodeq.BullMQ, Latency: measure.Latency{Count: 100, P50: 0.7}, P99Median: 6, Saturated: rivalSat, Err: rivalErr,
				Limit: "SATURATED in 4 of 5 rounds: the generator handed jobs on 9.6 ms late at p99", CPU: cpu}}
		if rivalSat {
			rs[1].P99Median = 0
		}
		return &Run{Latency: &LatencyScenario{Name: queue.Latency, Results: rs,
			Ratios: latencyRatios(rs, map[string]queue.Engine{busq.Name: queue.Valkey, nodeq.BullMQ: queue.Valkey}, nil)}}
	}
	for _, c := range []struct {
		name              string
		busSat, rivalSat  bool
		rivalErr          string
		notJudged, passed bool
	}{
		{"the rival saturated, the bus kept up", false, true, "", true, false},
		{"both measured", false, false, "", false, true},
		{"the bus saturated too", true, true, "", false, false},
		{"the rival failed", false, false, "driver exited", false, false},
	} {
		rs := judge(g, run(c.busSat, c.rivalSat, c.rivalErr), func(string) {})
		if rs[0].NotJudged != c.notJudged || rs[0].Pass != c.passed {
			t.Errorf("%s: %+v; want not judged %v, pass %v", c.name, rs[0], c.notJudged, c.passed)
		}
		if c.notJudged && !strings.Contains(rs[0].NotJudgedWhy, "bullmq could not be measured at the offered rate (SATURATED in 4 of 5") {
			t.Errorf("%s: the reason does not name the rival and its limit: %q", c.name, rs[0].NotJudgedWhy)
		}
		if c.rivalSat && rs[1].NotJudged {
			t.Errorf("%s: a best-of ratio with no rival left was not judged instead of failing: %+v", c.name, rs[1])
		}
	}
}

// The best rival of each engine is computed from the run's figures, never named: the fastest
// real queue wins, a model never does, and the latency ratio takes the lowest median p99.
func TestBestRivalIsComputed(t *testing.T) {
	res := func(sys string, e queue.Engine, v float64) *Result {
		return &Result{System: sys, Engine: e, JobsPerS: measure.Spread{Median: v}}
	}
	rs := []*Result{res(busq.Name, queue.Valkey, 100000), res(nodeq.BullMQ, queue.Valkey, 30000), res("asynq", queue.Valkey, 40000),
		res(riverq.Name, queue.Postgres, 25000), res(nodeq.Graphile, queue.Postgres, 45000), res(obanq.Name, queue.Postgres, 90000),
		{System: nodeq.PgBoss, Engine: queue.Postgres, Err: "boom"}}
	got := map[string]Ratio{}
	for _, r := range ratios(rs, map[string]bool{obanq.Name: true}) {
		got[r.Name] = r
	}
	if r := got["bus/"+BestPostgres]; r.Rival != nodeq.Graphile || r.Value < 2.22 || r.Value > 2.23 {
		t.Errorf("best postgres: %+v (the model and a failed system must not count)", r)
	}
	if r := got["bus/"+BestValkey]; r.Rival != "asynq" || r.Value != 2.5 {
		t.Errorf("best valkey: %+v", r)
	}
	lat := func(sys string, p50, p99 float64) *LatencyResult {
		return &LatencyResult{System: sys, Latency: measure.Latency{Count: 1, P50: p50, P99: p99}, P99Median: p99}
	}
	ls := []*LatencyResult{lat(busq.Name, 0.5, 1), lat(nodeq.BullMQ, 1, 4), lat("asynq", 1, 2), lat(riverq.Name, 3, 8)}
	engines := map[string]queue.Engine{busq.Name: queue.Valkey, nodeq.BullMQ: queue.Valkey, "asynq": queue.Valkey, riverq.Name: queue.Postgres}
	for _, r := range latencyRatios(ls, engines, nil) {
		if r.Name == "p99 bus/"+BestValkey && (r.Rival != "asynq" || r.Value != 0.5) {
			t.Errorf("p99 best valkey: %+v (the lowest p99 is the best)", r)
		}
		if r.Name == "p99 bus/"+BestPostgres && (r.Rival != riverq.Name || r.Value != 0.125) {
			t.Errorf("p99 best postgres: %+v", r)
		}
	}
}

// A latency round that did not offer the rate is saturated: left out of the p99 median, and a
// system saturated in most rounds has no latency to compare and names what fell behind.
func TestSaturatedRoundsAreNotALatency(t *testing.T) {
	ok := queue.Samples{Sent: 3000, SendSeconds: 3.01, LateUS: []float64{80, 120, 400}}
	if why := behindBy(ok, 1000, 3*time.Second); why != "" {
		t.Fatalf("a round that kept up: %q", why)
	}
	slow := queue.Samples{Sent: 3000, SendSeconds: 4.2, LateUS: []float64{80, 120, 400}}
	if why := behindBy(slow, 1000, 3*time.Second); !strings.Contains(why, "took 4.2s") {
		t.Fatalf("enqueues that overran the round: %q", why)
	}
	late := queue.Samples{Sent: 3000, SendSeconds: 3.01, LateUS: []float64{80, 120, 9000}}
	if why := behindBy(late, 1000, 3*time.Second); !strings.Contains(why, "late at p99") {
		t.Fatalf("a generator 9 ms late: %q", why)
	}
	info := queue.Info{Wake: "a wake token"}
	r := &LatencyResult{RoundP99: []float64{1, 50, 2, 3}, RoundSaturated: []bool{false, true, false, false}, RoundBehind: []string{"", "x", "", ""}}
	r.settle(info, 0)
	if r.Saturated || r.P99Median != 2 || r.Limit != info.Wake {
		t.Fatalf("one saturated round of four: %+v", r)
	}
	r = &LatencyResult{System: "slowq", RoundP99: []float64{1, 50, 60}, RoundSaturated: []bool{false, true, true}, RoundBehind: []string{"", "its enqueues took", "x"}}
	r.settle(info, 763)
	if !r.Saturated || r.P99Median != 0 || !strings.HasPrefix(r.Limit, "SATURATED in 2 of 3 rounds: its enqueues took") || !strings.Contains(r.Limit, "763 jobs/s") {
		t.Fatalf("two saturated rounds of three: %+v", r)
	}
	bus := &LatencyResult{System: busq.Name, Latency: measure.Latency{Count: 1, P50: 0.5, P99: 1}, P99Median: 1}
	r.Latency = measure.Latency{Count: 1, P50: 1, P99: 55}
	for _, x := range latencyRatios([]*LatencyResult{bus, r}, map[string]queue.Engine{"slowq": queue.Valkey}, nil) {
		t.Errorf("a ratio against a saturated system: %+v", x)
	}
}

// TestReRunReadsOnlyWhatItsChecksRead: the latency scenario's re-run measures the bus and the
// rivals its checks name (every Valkey system for best-valkey), never the rest, and the rest keep
// their first rows, marked as such.
func TestReRunReadsOnlyWhatItsChecksRead(t *testing.T) {
	half, four := 0.7, 4.2
	g := &Gate{Checks: []GateCheck{
		{Scenario: queue.Latency, Ratio: "p99 bus/bullmq", Max: &half},
		{Scenario: queue.Latency, Ratio: "p99 bus/" + BestValkey, Max: &four},
		{Scenario: queue.Drain, Ratio: "bus/river", Min: &four},
	}}
	engines := map[string]queue.Engine{busq.Name: queue.Valkey, nodeq.BullMQ: queue.Valkey, "asynq": queue.Valkey,
		riverq.Name: queue.Postgres, nodeq.Graphile: queue.Postgres}
	got := slices.Sorted(maps.Keys(g.reads(queue.Latency, engines)))
	if want := []string{"asynq", nodeq.BullMQ, busq.Name}; !slices.Equal(got, want) {
		t.Fatalf("the latency re-run reads %v, want %v", got, want)
	}
	if got := slices.Sorted(maps.Keys(g.reads(queue.Drain, engines))); !slices.Equal(got, []string{busq.Name, riverq.Name}) {
		t.Fatalf("the drain checks read %v", got)
	}
	if (&Gate{Checks: []GateCheck{{Scenario: queue.Drain, Ratio: "odd"}}}).reads(queue.Drain, engines) != nil {
		t.Fatal("a ratio of no known form narrowed the re-run")
	}
	first := []*LatencyResult{{System: busq.Name}, {System: "river", Limit: "LISTEN"}}
	rows := keepFirst([]*LatencyResult{{System: busq.Name}}, first, map[string]bool{busq.Name: true})
	if len(rows) != 2 || rows[0].FirstTry || !rows[1].FirstTry || rows[1].System != "river" || !strings.Contains(rows[1].Limit, "first measurement") {
		t.Fatalf("the rows after a narrowed re-run: %+v %+v", rows[0], rows[1])
	}
}

// TestCILatencyCoversTheGate: CI's latency scenario runs on fewer systems, never fewer than
// its gate's latency checks read (the bus and every Valkey queue, for best-valkey); the full
// bench measures every system.
func TestCILatencyCoversTheGate(t *testing.T) {
	g, err := LoadGate("gate.json")
	if err != nil {
		t.Fatal(err)
	}
	axes, _, err := plan(Config{Mode: "ci", Gate: g})
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]queue.Engine{} // bench/README.md's table of systems
	for _, r := range registry {
		engines[r.name] = queue.Postgres
	}
	for _, name := range []string{busq.Name, nodeq.BullMQ, "asynq"} {
		engines[name] = queue.Valkey
	}
	on := axes[0].latencyOn
	if axes[0].name != g.Axis || on == nil || len(on) >= len(registry) {
		t.Fatalf("ci: the gate's axis %s measures latency on %v", axes[0].name, on)
	}
	for name := range g.reads(queue.Latency, engines) {
		if !slices.Contains(on, name) {
			t.Errorf("ci's latency leaves out %s, which the gate reads", name)
		}
	}
	if axes, _, _ := plan(Config{Mode: "full", Gate: g}); axes[0].latencyOn != nil {
		t.Errorf("the full bench measures latency on %v only", axes[0].latencyOn)
	}
}

// slowEnqueuer takes each job 50 ms: two senders offer 40 jobs/s, far below any offered rate.
type slowEnqueuer struct{}

func (slowEnqueuer) Enqueue(ctx context.Context, _ []byte) error {
	queue.Sleep(ctx, 50*time.Millisecond)
	return nil
}

// TestGeneratorGivesUpOnASystemThatCannotTakeTheRate: when a quarter of the round waits for a
// sender, the generator stops offering and the round says so (saturated), instead of sending
// the rest at the system's own pace for the run's time. A machine of any speed makes the senders
// slower still, never faster than the rate.
func TestGeneratorGivesUpOnASystemThatCannotTakeTheRate(t *testing.T) {
	e := &env{p: Params{Rate: 1000, LatencyDuration: 200 * time.Millisecond, Producers: 2}}
	var s queue.Samples
	if _, err := e.send(context.Background(), slowEnqueuer{}, &s, e.p.LatencyDuration, nil); err != nil {
		t.Fatal(err)
	}
	if s.Offered != 200 || s.GaveUpBehind < queue.GiveUp(200) || s.GaveUpAt < s.GaveUpBehind || s.Sent >= s.Offered {
		t.Fatalf("the generator did not stop a quarter of the round behind: %+v", s)
	}
	if why := behindBy(s, 1000, 200*time.Millisecond); !strings.Contains(why, "the generator stopped there") {
		t.Fatalf("a round the generator gave up is not saturated: %q", why)
	}
}
