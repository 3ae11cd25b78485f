package report

import (
	"strings"
	"testing"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/scale"
)

func TestSVGHandlesMissingSystems(t *testing.T) {
	var b strings.Builder
	WriteLatencySVG(&b, &bench.LatencyScenario{Title: "t <&>", Results: []*bench.LatencyResult{{System: busName, Err: "x"}}}, "a")
	if !strings.HasPrefix(b.String(), "<svg") || strings.Contains(b.String(), "<polyline") || strings.Contains(b.String(), "t <&>") {
		t.Errorf("svg:\n%s", b.String())
	}
}

// A curve starts at its lowest measured percentile: a point at the histogram's floor (a clamp)
// is not drawn, and the page's copy of the plot leaves the legend to the section.
func TestLatencyCurveStartsAtAMeasuredPercentile(t *testing.T) {
	ls := &bench.LatencyScenario{Title: "x", Results: []*bench.LatencyResult{{System: "bullmq", Latency: measure.Latency{Count: 3, P50: 1, P99: 4,
		Percentiles: []measure.Percentile{{Q: 0, Ms: 0.001}, {Q: 10, Ms: 0.001}, {Q: 50, Ms: 1}, {Q: 99, Ms: 4}}}}}}
	withLegend, bare := latencySVG(ls, "a", true), latencySVG(ls, "a", false)
	pts := strings.SplitN(strings.SplitN(withLegend, `points="`, 2)[1], `"`, 2)[0]
	if n := len(strings.Fields(pts)); n != 2 {
		t.Errorf("the curve has %d points, want the 2 measured ones:\n%s", n, withLegend)
	}
	if !strings.Contains(withLegend, "bullmq: p50") || strings.Contains(bare, "bullmq: p50") {
		t.Errorf("the file's plot must carry its legend, the page's must not")
	}
}

// Two ceilings on one plot differ in colour or dash, and each is named at its line.
func TestCeilingsCanBeToldApart(t *testing.T) {
	seen := map[string]string{}
	for _, n := range []string{"pg-commit-1", "pg-commit-n", "valkey-evalsha"} {
		c, d := refStyle(n)
		if other, dup := seen[c+d]; dup {
			t.Errorf("%s and %s share a style", n, other)
		}
		seen[c+d] = n
	}
	svg := barChart("t", "u", []barRow{{label: "bus", median: 100, lo: 90, hi: 110}}, []refLine{{name: "pg-commit-1", value: 80}, {name: "pg-commit-n", value: 120}})
	for _, want := range []string{"pg-commit-1 80", "pg-commit-n 120", `stroke-dasharray="6 3"`, `stroke-dasharray="2 3"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("bar chart lacks %q", want)
		}
	}
}

func TestAsymmetryHasARowPerSystem(t *testing.T) {
	rep := &bench.Report{Systems: []queue.Info{{Name: busName, Engine: queue.Valkey, WithRow: "outbox"},
		{Name: "oban-shaped", Engine: queue.Postgres, Model: true, WithRow: "InsertTx"}}}
	run := &bench.Run{Axis: "a", Engines: []bench.EngineInfo{{Engine: queue.Postgres, Settings: [][2]string{{"synchronous_commit", "on"}, {"fsync", "on"}}},
		{Engine: queue.Valkey, Settings: [][2]string{{"appendonly", "no"}, {"save", `""`}}}}}
	var b strings.Builder
	writeAsymmetry(&b, rep, run)
	for _, want := range []string{"bus ", "volatile", "oban-shaped (a model, not the queue)", "durable: WAL fsynced", "outbox"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("asymmetry lacks %q:\n%s", want, b.String())
		}
	}
}

func TestScaleSection(t *testing.T) {
	cpu := 0.1
	ax := &scale.Axis{Title: "t", Repeats: 2, Results: []*scale.Result{{Deployment: scale.Cluster, Primaries: 2, Queues: 6, Workers: 6,
		JobsPerS: measure.Spread{Median: 1000, Min: 900, Max: 1100, Repeats: []float64{900, 1100}}, PerPrimary: 500,
		CPU: &measure.CPU{Bench: 1, Outside: &cpu}, Nodes: []scale.Node{{Addr: "a", Queues: 3}, {Addr: "b", Queues: 3}}}},
		Ratios: []measure.Ratio{{Name: "cluster-2/cluster-1", Value: 1.2}}}
	var out strings.Builder
	writeScale(&out, &bench.Report{Scale: ax, Machine: bench.Machine{Cores: 2}})
	for _, must := range []string{HeadScale, "cluster-2", "per primary", "2 cores (runtime.NumCPU)", "the shape", "cluster-2/cluster-1 = 1.20"} {
		if !strings.Contains(out.String(), must) {
			t.Errorf("the scale section lacks %q:\n%s", must, out.String())
		}
	}
	if strings.Contains(out.String(), "?") {
		t.Errorf("an unknown figure printed as ?:\n%s", out.String())
	}
}
