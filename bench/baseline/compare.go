package baseline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchmath"
)

// Metric is one figure of both builds and its verdict.
type Metric struct {
	MetricSpec
	Base       []float64 `json:"baseline"`
	Tree       []float64 `json:"tree"`
	BaseMedian float64   `json:"baseline_median"`
	TreeMedian float64   `json:"tree_median"`
	// Change is the tree's median ÷ the baseline's − 1 (positive: the tree's figure is higher).
	Change float64 `json:"change"`
	// P is the U test of the two samples as measured (benchstat's "p"); PBeyond the U test of
	// the tree's against the baseline's moved by the margin in the worse direction: below Alpha,
	// with the tree's median past the moved one, the tree is worse by more than the margin.
	P       float64  `json:"p"`
	PBeyond float64  `json:"p_beyond_margin"`
	Worse   bool     `json:"worse_beyond_margin"`
	Behind  int      `json:"behind_rounds,omitempty"` // latency rounds whose generator fell behind (either build)
	Errors  []string `json:"errors,omitempty"`
}

// round is one agent invocation's figures.
type round struct {
	PerS   float64 `json:"per_s"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Behind bool    `json:"behind"`
	Err    string  `json:"error"`
}

func (r round) field(name string) float64 {
	switch name {
	case "p50_ms":
		return r.P50
	case "p99_ms":
		return r.P99
	}
	return r.PerS
}

// compare runs every scenario the spec needs, Repeats rounds per build, interleaved: within a
// repeat each scenario runs on both builds back to back, the order swapped every repeat, so a
// drift of the machine falls on both alike.
func compare(ctx context.Context, cfg Config, base, tree Agent, prog io.Writer) []Metric {
	var scenarios []string
	for _, m := range cfg.Spec.Metrics {
		if !slices.Contains(scenarios, m.Scenario) {
			scenarios = append(scenarios, m.Scenario)
		}
	}
	rounds := map[string][2][]round{}
	seq := 0
	for rep := range cfg.Spec.Repeats {
		for _, sc := range scenarios {
			order := []int{0, 1}
			if rep%2 == 1 {
				order = []int{1, 0}
			}
			for _, side := range order {
				agent := []Agent{base, tree}[side]
				seq++
				q := fmt.Sprintf("bench-baseline-%d-%d", time.Now().UnixMilli()%1_000_000, seq)
				r := invoke(ctx, agent, cfg, sc, q)
				if cfg.Clean != nil {
					_ = cfg.Clean(context.WithoutCancel(ctx), q)
				}
				both := rounds[sc]
				both[side] = append(both[side], r)
				rounds[sc] = both
				fmt.Fprintf(prog, "emq-bench: baseline check %s %s round %d/%d: %s\n", sc, []string{"baseline", "tree"}[side], rep+1, cfg.Spec.Repeats, r)
			}
		}
	}
	out := make([]Metric, 0, len(cfg.Spec.Metrics))
	for _, ms := range cfg.Spec.Metrics {
		out = append(out, judge(ms, cfg.Spec.Alpha, rounds[ms.Scenario]))
	}
	return out
}

func (r round) String() string {
	if r.Err != "" {
		return "error: " + r.Err
	}
	if r.P99 > 0 {
		s := fmt.Sprintf("p50 %.2fms p99 %.2fms", r.P50, r.P99)
		if r.Behind {
			s += " (the generator fell behind)"
		}
		return s
	}
	return fmt.Sprintf("%.0f jobs/s", r.PerS)
}

// invoke runs one round of one build on queue q.
func invoke(ctx context.Context, a Agent, cfg Config, scenario, q string) round {
	s := cfg.Sizes
	args := []string{"-valkey", cfg.Valkey, "-queue", q, "-scenario", scenario, "-n", strconv.Itoa(s.Backlog),
		"-workers", strconv.Itoa(s.Workers), "-parked", strconv.Itoa(s.Parked), "-producers", strconv.Itoa(s.Producers),
		"-rate", strconv.FormatFloat(s.Rate, 'f', -1, 64)}
	secs := s.EnqueueSeconds
	if scenario == "latency" {
		secs = s.LatencySeconds
	}
	args = append(args, "-seconds", strconv.FormatFloat(secs, 'f', -1, 64))
	cmd := exec.CommandContext(ctx, a.Bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var r round
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil && r.Err == "" {
		r.Err = fmt.Sprintf("%s: no figures (%v): %s", a.Label, err, strings.TrimSpace(errb.String()))
	}
	return r
}

// judge compares one metric's rounds: [0] the baseline's, [1] the tree's.
func judge(ms MetricSpec, alpha float64, rs [2][]round) Metric {
	m := Metric{MetricSpec: ms}
	for side, list := range rs {
		for _, r := range list {
			if r.Err != "" {
				m.Errors = append(m.Errors, []string{"baseline", "tree"}[side]+": "+r.Err)
				continue
			}
			if r.Behind {
				m.Behind++
			}
			v := r.field(ms.Field)
			if side == 0 {
				m.Base = append(m.Base, v)
			} else {
				m.Tree = append(m.Tree, v)
			}
		}
	}
	if len(m.Base) == 0 || len(m.Tree) == 0 {
		return m
	}
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	sb, st := benchmath.NewSample(slices.Clone(m.Base), th), benchmath.NewSample(slices.Clone(m.Tree), th)
	m.BaseMedian = benchmath.AssumeNothing.Summary(sb, 0.95).Center
	m.TreeMedian = benchmath.AssumeNothing.Summary(st, 0.95).Center
	if m.BaseMedian != 0 {
		m.Change = m.TreeMedian/m.BaseMedian - 1
	}
	m.P = benchmath.AssumeNothing.Compare(sb, st).P
	// The baseline moved by the margin toward worse: the most the tree may be worse by.
	k := 1 + ms.Margin
	if ms.Higher {
		k = 1 - ms.Margin
	}
	moved := make([]float64, len(m.Base))
	for i, v := range m.Base {
		moved[i] = v * k
	}
	sm := benchmath.NewSample(moved, th)
	m.PBeyond = benchmath.AssumeNothing.Compare(sm, st).P
	movedMedian := m.BaseMedian * k
	past := m.TreeMedian > movedMedian
	if ms.Higher {
		past = m.TreeMedian < movedMedian
	}
	m.Worse = past && m.PBeyond < alpha
	return m
}

// verdict folds the metrics: FAIL when one is worse beyond its margin, or could not be
// measured on both builds (a round that failed leaves a figure out; at most one per build may).
func verdict(ms []Metric) (Status, string) {
	var bad []string
	for _, m := range ms {
		switch {
		case m.Worse:
			bad = append(bad, fmt.Sprintf("%s worse by %.0f%% (margin %.0f%%, p %.3g)", m.Name, 100*abs(m.Change), 100*m.Margin, m.PBeyond))
		case len(m.Base) == 0 || len(m.Tree) == 0 || len(m.Errors) > 2:
			bad = append(bad, fmt.Sprintf("%s not measured on both builds: %s", m.Name, strings.Join(m.Errors, "; ")))
		}
	}
	if len(bad) > 0 {
		return Fail, strings.Join(bad, "; ")
	}
	return Pass, "no metric worse than the baseline beyond its margin"
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
