package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/report"
	"github.com/echomq/kit/bench/systems/asynqq"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/bench/systems/nodeq"
	"github.com/echomq/kit/bench/systems/obanq"
	"github.com/echomq/kit/bench/systems/riverq"
	"github.com/echomq/kit/internal/browsercheck"
)

// TestReportStructure runs the program in its tiny mode against real engines (EMQ_PG_URL /
// EMQ_VALKEY_ADDR or native ones) and checks the shape of what it wrote.
func TestReportStructure(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	// No deadline of the test's own: a tiny bench of every system takes minutes on a busy
	// machine (a 4-minute bound once killed the browser check at the end), and a hang is the
	// go test -timeout's to report, with every goroutine's stack.
	ctx := context.Background()
	if err := run(ctx, []string{"-mode", "tiny", "-out", dir}, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "emq-bench: enqueue-single") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}

	out := checkText(t, dir)
	var rep bench.Report
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "bench.json"))), &rep); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	r := checkRun(t, &rep)
	lat := checkSystems(t, &rep, r)
	checkScale(t, &rep, out, dir)
	checkSVG(t, filepath.Join(dir, r.Latency.PlotFile), len(lat))
	pageInBrowser(t, ctx, dir)
}

// checkText checks bench.out's sections and returns it.
func checkText(t *testing.T, dir string) string {
	t.Helper()
	out := read(t, filepath.Join(dir, "bench.out"))
	asym := strings.Index(out, report.HeadAsymmetry)
	if asym < 0 {
		t.Fatalf("no asymmetry section:\n%s", out)
	}
	// Every figure sits in a table whose header row starts "ceiling" or "system"; the asymmetry
	// must precede the first of them and every section heading.
	for _, marker := range []string{"\nceiling ", "\nsystem ", report.HeadCeilings, report.HeadScenario, report.HeadGaps} {
		if i := strings.Index(out, marker); i < 0 || i < asym {
			t.Errorf("%q at %d, asymmetry at %d: the asymmetry must come first", strings.TrimSpace(marker), i, asym)
		}
	}
	section := out[asym:strings.Index(out, report.HeadCeilings)]
	for _, must := range []string{"synchronous_commit=", "appendonly", "not atomic", "outbox", "16.14", "valkey 8.1.1", "cores", "per timed repeat",
		"Same conditions for every system", "bullmq 6.7.0", "MaxWorkers=8", "limit=8", "Concurrency=8", "BatchEnqueue: true", "pool of 8 connections", "FetchCooldown=2ms",
		"graphile-worker 0.18.0", "concurrentJobs=24", "localQueue.size=500", "pg-boss 12.38.0", "batchSize=500", "asynq v0.26.0",
		"Node.js v22.", "a model, not the queue", "volatile", "durable", "as documented: worker.graphile.org/docs/performance",
		"as documented: docs.bullmq.io/guide/workers/concurrency", "as documented: riverqueue.com/docs/benchmarks", "producer process of its own"} {
		if !strings.Contains(section, must) {
			t.Errorf("asymmetry section lacks %q:\n%s", must, section)
		}
	}
	for _, sc := range bench.Scenarios {
		if sc != queue.DrainBacklog && !strings.Contains(out, report.HeadScenario+sc+" ") {
			t.Errorf("no table for scenario %s", sc)
		}
	}
	if !strings.Contains(out, report.HeadBacklog) {
		t.Errorf("no backlog axis")
	}
	if strings.Contains(out, "?") {
		t.Errorf("bench.out prints a ? (an unknown figure must say what it is)")
	}
	if strings.Contains(out, " error ") { // tabwriter turns the table's tabs into spaces
		t.Errorf("a system failed:\n%s", out)
	}
	// The closing sections: per-script server time, the targets with verdicts, where the time goes.
	for _, head := range []string{report.HeadScripts, report.HeadTargets, report.HeadBounds} {
		if i := strings.Index(out, head); i < strings.Index(out, report.HeadScenario+queue.Drain) {
			t.Errorf("section %q missing or before the drain", head)
		}
	}
	for _, must := range []string{"claim_batch + complete_batch =", "bus drain ≥ 50000 jobs/s", "→ ", "valkey (INFO commandstats)", "start-up before the first handler",
		"What held each system", "\n  bus: "} {
		if !strings.Contains(out, must) {
			t.Errorf("bench.out lacks %q", must)
		}
	}

	return out
}

// checkRun checks the one axis's gaps, targets, scripts and ceilings and returns it.
func checkRun(t *testing.T, rep *bench.Report) *bench.Run {
	t.Helper()
	if len(rep.Runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(rep.Runs))
	}
	r := rep.Runs[0]
	if len(r.Gaps) != 0 {
		t.Errorf("gaps: %v", r.Gaps)
	}
	if len(r.Targets) != 8 {
		t.Errorf("targets: %+v", r.Targets)
	}
	if len(r.Scripts) != 5 {
		t.Errorf("bus scripts: %+v", r.Scripts)
	}
	for _, c := range r.Scripts {
		batch := strings.HasSuffix(c.Script, "_batch")
		if c.Jobs != rep.Params.Backlog || c.Calls < 1 || c.UsecPerJob <= 0 || (!batch && c.Calls < int64(c.Jobs)) || (batch && c.Calls >= int64(c.Jobs)) {
			t.Errorf("script %+v", c)
		}
	}
	for _, c := range r.Ceilings {
		if c.Err != "" || c.Rate.Median <= 0 {
			t.Errorf("ceiling %s: %+v", c.Name, c)
		}
	}
	return r
}

// checkSystems checks every system's rows in every scenario it offers and returns the systems
// of the latency scenario.
func checkSystems(t *testing.T, rep *bench.Report, r *bench.Run) []string {
	t.Helper()
	// Every system of the registry, in its order; each scenario holds the ones offering it.
	all := []string{busq.Name, busq.AbsorbName, nodeq.BullMQ, asynqq.Name, riverq.Name, nodeq.Graphile, nodeq.GraphileW, nodeq.PgBoss, obanq.Name}
	var names []string
	offers := map[string]queue.Info{}
	for _, i := range rep.Systems {
		names = append(names, i.Name)
		offers[i.Name] = i
	}
	if strings.Join(names, ",") != strings.Join(all, ",") {
		t.Errorf("systems %v, want %v", names, all)
	}
	if want := len(bench.Scenarios) - 2 + len(rep.Params.BacklogSizes); len(r.Scenarios) != want {
		t.Errorf("%d throughput scenarios in JSON, want %d", len(r.Scenarios), want)
	}
	for _, s := range r.Scenarios {
		var want []string
		for _, n := range all {
			if offers[n].Runs(s.Name) {
				want = append(want, n)
			}
		}
		if len(s.Results) != len(want) {
			t.Errorf("%s: %d results, want %v", s.Name, len(s.Results), want)
			continue
		}
		for i, res := range s.Results {
			if res.System != want[i] || res.Err != "" || res.JobsPerS.Median <= 0 || res.Fraction <= 0 || res.CPU == nil || res.CPU.Bench <= 0 {
				t.Errorf("%s: result %+v", s.Name, res)
			}
			if (res.System == busq.Name) != (res.Server != nil) && s.Name != queue.DrainOnce {
				t.Errorf("%s: %s valkey time %+v", s.Name, res.System, res.Server)
			}
		}
		best := 0
		for _, x := range s.Ratios {
			if strings.Contains(x.Name, "/best-") {
				best++
				if x.Rival == "" || x.Rival == obanq.Name {
					t.Errorf("%s: best-of ratio %+v names no real rival", s.Name, x)
				}
			}
		}
		if s.Name != queue.DrainOnce && (len(s.Ratios) != len(want)-1+best || best == 0) {
			t.Errorf("%s: ratios %+v", s.Name, s.Ratios)
		}
	}
	var lat []string
	for _, n := range all {
		if offers[n].Runs(queue.Latency) {
			lat = append(lat, n)
		}
	}
	if r.Latency == nil || len(r.Latency.Results) != len(lat) {
		t.Fatalf("latency: %+v", r.Latency)
	}
	for _, res := range r.Latency.Results {
		// A round that could not offer the rate (a busy machine, a slow enqueue) is saturated and
		// says why; a system saturated in most rounds has no median p99, and its limit says so.
		// A generator a quarter of a round behind stops offering: fewer sent than offered only in
		// a saturated round.
		figure := res.P99Median > 0 || (res.Saturated && strings.HasPrefix(res.Limit, "SATURATED in "))
		stopped := res.Sent < res.Offered && !slices.Contains(res.RoundSaturated, true)
		if res.Err != "" || res.Received != res.Sent || res.Sent > res.Offered || stopped || res.Offered == 0 || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 ||
			len(res.RoundP99) != rep.Params.LatencyRounds || len(res.RoundSaturated) != len(res.RoundP99) || !figure || res.Limit == "" {
			t.Errorf("latency %s: %+v", res.System, res)
		}
		for _, p := range res.Latency.Percentiles {
			if p.Ms <= 0.001 {
				t.Errorf("latency %s: a sample at the histogram's floor (%+v): a sender ran early", res.System, p)
			}
		}
	}

	return lat
}

// checkScale checks the scale axis in bench.json, bench.out and bench.html.
func checkScale(t *testing.T, rep *bench.Report, out, dir string) {
	t.Helper()
	// The scale axis: the standalone baseline and every cluster size, each with a figure (a
	// cluster the engines cannot give, e.g. EMQ_VALKEY_CLUSTER of another size, is a gap).
	if rep.Scale == nil || len(rep.Scale.Results)+len(rep.Scale.Gaps) != 1+len(rep.Params.ScalePrimaries) {
		t.Fatalf("scale axis: %+v", rep.Scale)
	}
	if len(rep.Scale.Gaps) > 0 {
		t.Logf("scale axis gaps: %v", rep.Scale.Gaps)
	}
	for _, res := range rep.Scale.Results {
		if res.Err != "" || res.JobsPerS.Median <= 0 || res.PerPrimary <= 0 || len(res.Nodes) != res.Primaries || res.CPU == nil {
			t.Errorf("scale %s: %+v", res.Label(), res)
		}
	}
	if len(rep.Scale.Gaps) == 0 && len(rep.Scale.Ratios) != len(rep.Params.ScalePrimaries) {
		t.Errorf("scale ratios: %+v", rep.Scale.Ratios)
	}
	if i := strings.Index(out, report.HeadScale); i < 0 || !strings.Contains(out[i:], "cores (runtime.NumCPU)") || !strings.Contains(out[i:], "the shape") || !strings.Contains(out[i:], "cluster-1 → ") {
		t.Errorf("bench.out has no scale section with the cores and the shape note")
	}
	page := read(t, filepath.Join(dir, "bench.html"))
	if !strings.Contains(page, "primaries → jobs/s") {
		t.Errorf("bench.html has no scale plot")
	}
	if m := regexp.MustCompile(`<t[dh][^>]*>[^<]*\?`).FindString(page); m != "" {
		t.Errorf("bench.html has a ? in a table cell: %q", m)
	}
	if strings.Count(page, `class="legend"`) != 2*len(rep.Runs) {
		t.Errorf("bench.html: %d legends for %d axes, want one pair (systems; cpu and ceilings) per axis section", strings.Count(page, `class="legend"`), len(rep.Runs))
	}

}

// checkSVG checks the latency plot is well-formed with one curve per system.
func checkSVG(t *testing.T, path string, curves int) {
	t.Helper()
	svg := read(t, path)
	dec := xml.NewDecoder(strings.NewReader(svg))
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != curves {
		t.Errorf("svg has %d lines, want %d", lines, curves)
	}
}

// pageInBrowser renders bench.html in headless Chromium as a reader would: no label overflows,
// every plot has data, nothing is fetched. The screenshot stays outside the repository, and
// only when the test fails (the log says where): a green run leaves nothing behind.
func pageInBrowser(t *testing.T, ctx context.Context, dir string) {
	shots, err := os.MkdirTemp("", "emq-bench-shots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(shots)
		}
	})
	r, err := browsercheck.Check(ctx, filepath.Join(dir, "bench.html"), filepath.Join(shots, "bench.png"), 900)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Logf("SKIP the browser check of bench.html: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench.html screenshot (kept if the test fails): %s", r.Screenshot)
	if !r.OK() {
		t.Errorf("bench.html in a browser: %v", r)
	}
	// The asymmetry is the first figure, on the first screen (900 × 700).
	if top, ok := r.Tops["asymmetry"]; !ok || top > 400 {
		t.Errorf("the asymmetry table starts %v px down (found %v): not on the first screen", top, ok)
	}
}

func TestRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-mode", "nope"}, {"extra"}, {"-bogus"}, {"-workers", "-3"}, {"-pg-pool", "500"}, {"-only", "nope"}} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An impossible threshold fails the run (after its one re-run), with the report still written.
func TestGateFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate.json")
	if err := os.WriteFile(gate, []byte(`{"checks":[{"scenario":"drain","ratio":"bus/oban-shaped","min":1e9,"why":"impossible"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-mode", "tiny", "-only", "drain", "-gate", gate, "-out", dir}, io.Discard)
	if !errors.Is(err, errGate) {
		t.Fatalf("run = %v, want the gate's failure", err)
	}
	// The console names the check, so a CI log's tail says why without bench.out.
	if want := "drain bus/oban-shaped = "; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "want ≥ 1e+09 (1 re-run") {
		t.Errorf("the error does not name the failed check (%q): %v", want, err)
	}
	out := read(t, filepath.Join(dir, "bench.out"))
	if !strings.Contains(out, "GATE FAIL") || !strings.Contains(out, "FAIL (after 1 re-run)") {
		t.Errorf("bench.out does not show the failed gate:\n%s", out)
	}
}
