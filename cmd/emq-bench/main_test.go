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
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/internal/browsercheck"
)

// TestReportStructure runs the program in its tiny mode against real engines (EMQ_PG_URL /
// EMQ_VALKEY_ADDR or native ones) and checks the shape of what it wrote.
func TestReportStructure(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"-mode", "tiny", "-out", dir}, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "emq-bench: enqueue-single") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}

	out := read(t, filepath.Join(dir, "bench.out"))
	asym := strings.Index(out, bench.HeadAsymmetry)
	if asym < 0 {
		t.Fatalf("no asymmetry section:\n%s", out)
	}
	// Every figure sits in a table whose header row starts "ceiling" or "system"; the asymmetry
	// must precede the first of them and every section heading.
	for _, marker := range []string{"\nceiling ", "\nsystem ", bench.HeadCeilings, bench.HeadScenario, bench.HeadGaps} {
		if i := strings.Index(out, marker); i < 0 || i < asym {
			t.Errorf("%q at %d, asymmetry at %d: the asymmetry must come first", strings.TrimSpace(marker), i, asym)
		}
	}
	section := out[asym:strings.Index(out, bench.HeadCeilings)]
	for _, must := range []string{"synchronous_commit=", "appendonly", "not atomic", "outbox", "16.14", "valkey 8.1.1", "cores", "per timed repeat",
		"Same conditions for every system", "bullmq 6.7.0", "MaxWorkers=8", "limit=8", "Concurrency=8", "BatchEnqueue: true", "pool of 8 connections", "FetchCooldown=2ms"} {
		if !strings.Contains(section, must) {
			t.Errorf("asymmetry section lacks %q:\n%s", must, section)
		}
	}
	for _, sc := range bench.Scenarios {
		if !strings.Contains(out, bench.HeadScenario+sc+" ") {
			t.Errorf("no table for scenario %s", sc)
		}
	}
	if strings.Contains(out, " error ") { // tabwriter turns the table's tabs into spaces
		t.Errorf("a system failed:\n%s", out)
	}
	// The closing sections: per-script server time, the targets with verdicts, where the time goes.
	for _, head := range []string{bench.HeadScripts, bench.HeadTargets, bench.HeadBounds} {
		if i := strings.Index(out, head); i < strings.Index(out, bench.HeadScenario+bench.ScDrain) {
			t.Errorf("section %q missing or before the drain", head)
		}
	}
	for _, must := range []string{"claim_batch + complete_batch =", "bus drain ≥ 50000 jobs/s", "→ ", "valkey (INFO commandstats)", "start-up before the first handler"} {
		if !strings.Contains(out, must) {
			t.Errorf("bench.out lacks %q", must)
		}
	}

	var rep bench.Report
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "bench.json"))), &rep); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(rep.Runs))
	}
	r := rep.Runs[0]
	if len(r.Gaps) != 0 {
		t.Errorf("gaps: %v", r.Gaps)
	}
	if len(r.Targets) != 7 {
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
	systems := []string{bench.SysOban, bench.SysRiver, bench.SysBus, bench.SysBullMQ}
	if len(r.Scenarios) != len(bench.Scenarios)-1 {
		t.Errorf("%d throughput scenarios in JSON", len(r.Scenarios))
	}
	for _, s := range r.Scenarios {
		systems := systems
		nratios := 3
		switch s.Name {
		case bench.ScEnqueueTx: // BullMQ has no business transaction
			systems, nratios = systems[:3], 2
		case bench.ScDrainOnce: // the bus with an absorbing handler, against every plain drain
			systems, nratios = []string{bench.SysBusAbsorb}, 4
		}
		if len(s.Results) != len(systems) {
			t.Errorf("%s: %d results", s.Name, len(s.Results))
			continue
		}
		for i, res := range s.Results {
			if res.System != systems[i] || res.Err != "" || res.JobsPerS.Median <= 0 || res.Fraction <= 0 || res.CPU == nil || res.CPU.Bench <= 0 {
				t.Errorf("%s: result %+v", s.Name, res)
			}
			if (res.System == bench.SysBus) != (res.Server != nil) && s.Name != bench.ScDrainOnce {
				t.Errorf("%s: %s valkey time %+v", s.Name, res.System, res.Server)
			}
		}
		if len(s.Ratios) != nratios {
			t.Errorf("%s: ratios %+v", s.Name, s.Ratios)
		}
	}
	if r.Latency == nil || len(r.Latency.Results) != len(systems) {
		t.Fatalf("latency: %+v", r.Latency)
	}
	for _, res := range r.Latency.Results {
		if res.Err != "" || res.Received != res.Offered || res.Offered == 0 || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 {
			t.Errorf("latency %s: %+v", res.System, res)
		}
	}

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
	if i := strings.Index(out, bench.HeadScale); i < 0 || !strings.Contains(out[i:], "cores (runtime.NumCPU)") || !strings.Contains(out[i:], "the shape") || !strings.Contains(out[i:], "cluster-1 → ") {
		t.Errorf("bench.out has no scale section with the cores and the shape note")
	}
	if page := read(t, filepath.Join(dir, "bench.html")); !strings.Contains(page, "primaries → jobs/s") {
		t.Errorf("bench.html has no scale plot")
	}

	svg := read(t, filepath.Join(dir, r.Latency.PlotFile))
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
	if lines != len(systems) {
		t.Errorf("svg has %d lines, want %d", lines, len(systems))
	}
	pageInBrowser(t, ctx, dir)
}

// pageInBrowser renders bench.html in headless Chromium as a reader would: no label overflows,
// every plot has data, nothing is fetched. The screenshot stays outside the repository.
func pageInBrowser(t *testing.T, ctx context.Context, dir string) {
	shots, err := os.MkdirTemp("", "emq-bench-shots-")
	if err != nil {
		t.Fatal(err)
	}
	r, err := browsercheck.Check(ctx, filepath.Join(dir, "bench.html"), filepath.Join(shots, "bench.png"), 900)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Logf("SKIP the browser check of bench.html: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench.html screenshot: %s", r.Screenshot)
	if !r.OK() {
		t.Errorf("bench.html in a browser: %v", r)
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
	out := read(t, filepath.Join(dir, "bench.out"))
	if !strings.Contains(out, "GATE FAIL") || !strings.Contains(out, "FAIL (after 1 re-run)") {
		t.Errorf("bench.out does not show the failed gate:\n%s", out)
	}
}
