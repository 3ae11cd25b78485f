// Package baseline is the bench's check of the bus against itself: it builds the agent
// (bench/baseline/agent) against the baseline — the last release tag, or BENCH_BASELINE — and
// against the working tree, runs the two interleaved on the same Valkey, and fails when the
// working tree is worse than the baseline by more than a stated margin with statistical
// confidence: a Mann–Whitney U test (golang.org/x/perf/benchmath, the one benchstat uses) of the
// tree's rounds against the baseline's moved by the margin.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/echomq/kit/internal/tempdir"
)

// Spec is the check as bench/gate.json states it: how many rounds, at what confidence, and
// each metric's margin with where it comes from.
type Spec struct {
	Repeats int     `json:"repeats"`
	Alpha   float64 `json:"alpha"`
	// The rounds' sizes: the drain's backlog and how long an enqueue and a latency round run
	// (workers, producers and the rate are the run's own).
	Backlog        int          `json:"backlog"`
	EnqueueSeconds float64      `json:"enqueue_seconds"`
	LatencySeconds float64      `json:"latency_seconds"`
	Metrics        []MetricSpec `json:"metrics"`
	Why            string       `json:"why,omitempty"`
}

// Check refuses a spec that cannot judge: too few rounds for the U test to reach alpha, or a
// metric without its scenario, field or margin.
func (s Spec) Check() error {
	if s.Repeats < 6 || s.Alpha <= 0 || s.Alpha >= 1 {
		return fmt.Errorf("baseline: repeats %d, alpha %v: want at least 6 rounds (a U test cannot reach p < 0.01 with fewer) and 0 < alpha < 1", s.Repeats, s.Alpha)
	}
	if s.Backlog < 1 || s.EnqueueSeconds <= 0 || s.LatencySeconds <= 0 || len(s.Metrics) == 0 {
		return fmt.Errorf("baseline: want a backlog, enqueue and latency seconds, and at least one metric")
	}
	for _, m := range s.Metrics {
		if m.Name == "" || !slices.Contains([]string{"drain", "enqueue", "latency"}, m.Scenario) ||
			!slices.Contains([]string{"per_s", "p50_ms", "p99_ms"}, m.Field) || m.Margin <= 0 || m.Margin >= 1 {
			return fmt.Errorf("baseline: metric %q: want a name, a scenario (drain, enqueue, latency), a field (per_s, p50_ms, p99_ms) and a margin in (0, 1)", m.Name)
		}
	}
	return nil
}

// MetricSpec is one figure compared: the scenario that yields it, which way is better, and the
// margin by which the tree may be worse before the check can fail.
type MetricSpec struct {
	Name     string  `json:"name"`     // as printed: "drain jobs/s"
	Scenario string  `json:"scenario"` // the agent's: drain, enqueue, latency
	Field    string  `json:"field"`    // per_s, p50_ms, p99_ms
	Higher   bool    `json:"higher_is_better"`
	Margin   float64 `json:"margin"` // 0.15: the tree may be up to 15% worse
	Basis    string  `json:"basis,omitempty"`
}

// Sizes are the agent's scenario sizes.
type Sizes struct {
	Backlog, Workers, Parked, Producers int
	EnqueueSeconds, LatencySeconds      float64
	Rate                                float64
}

// SizesOf takes the spec's round sizes and the run's workers, parked slots, producers and rate.
func (s Spec) SizesOf(workers, parked, producers int, rate float64) Sizes {
	return Sizes{Backlog: s.Backlog, Workers: workers, Parked: parked, Producers: producers,
		EnqueueSeconds: s.EnqueueSeconds, LatencySeconds: s.LatencySeconds, Rate: rate}
}

// Config is one baseline check.
type Config struct {
	Root   string // the kit's checkout: the working tree judged
	Ref    string // BENCH_BASELINE; "" takes the last release tag
	Valkey string // the server both builds run on
	Spec   Spec
	Sizes  Sizes
	// Clean deletes a queue's keys after its round (the agent leaves what it measured).
	Clean    func(ctx context.Context, queue string) error
	Progress io.Writer
	// TreeExtra adds files to the working tree's agent build: the check's own test slows the bus
	// from outside with it. Empty in every real run.
	TreeExtra map[string][]byte
}

// Status is the check's verdict.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	// NotRun: no baseline could be found (and none was asked for): the check did not run, which
	// the report says as loudly as a failure, without failing a correct tree.
	NotRun Status = "NOT RUN"
)

// Result is the check as run.
type Result struct {
	Status  Status   `json:"status"`
	Why     string   `json:"why,omitempty"`
	Ref     Ref      `json:"baseline"`
	Tree    Tree     `json:"tree"`
	Agents  []Agent  `json:"agents,omitempty"` // the baseline's, then the tree's
	Spec    Spec     `json:"spec"`
	Sizes   Sizes    `json:"sizes"`
	Metrics []Metric `json:"metrics,omitempty"`
	Seconds float64  `json:"seconds"`
}

// Run resolves the baseline, extracts its tree, and compares it with the working tree. It never
// returns an error: every way it can end is a Result (FAIL when the check could not be made
// although a baseline exists or was asked for; NOT RUN when there is none to compare with).
func Run(ctx context.Context, cfg Config) *Result {
	start := time.Now()
	r := &Result{Spec: cfg.Spec, Sizes: cfg.Sizes}
	prog := progress(cfg)
	var err error
	if r.Tree, err = WorkingTree(ctx, cfg.Root); err == nil {
		r.Ref, err = Resolve(ctx, cfg.Root, cfg.Ref, r.Tree)
	}
	if err != nil {
		r.Status, r.Why = Fail, err.Error()
		if errors.Is(err, ErrNoBaseline) && cfg.Ref == "" {
			r.Status = NotRun
		}
		fmt.Fprintf(prog, "emq-bench: baseline check %s: %s\n", r.Status, r.Why)
		r.Seconds = time.Since(start).Seconds()
		return r
	}
	scratch, err := tempdir.New("", "emq-baseline-", "emq-baseline-")
	if err == nil {
		defer os.RemoveAll(scratch)
		src := filepath.Join(scratch, "src")
		if err = Extract(ctx, cfg.Root, r.Ref.Commit, src); err == nil {
			base := Source{Label: r.Ref.Name + " (" + short(r.Ref.Commit) + ")", Dir: src}
			tree := Source{Label: "working tree (" + r.Tree.String() + ")", Dir: cfg.Root, Extra: cfg.TreeExtra}
			c := Compare(ctx, cfg, base, tree)
			c.Ref, c.Tree = r.Ref, r.Tree
			r = c
		}
	}
	if err != nil {
		r.Status, r.Why = Fail, fmt.Sprintf("the baseline %s could not be extracted: %v", r.Ref.Name, err)
	}
	r.Seconds = time.Since(start).Seconds()
	return r
}

func progress(cfg Config) io.Writer {
	if cfg.Progress == nil {
		return io.Discard
	}
	return cfg.Progress
}

// Compare builds the agent against base and tree (base's tree gets the working tree's agent
// sources first) and runs them interleaved on cfg.Valkey.
func Compare(ctx context.Context, cfg Config, base, tree Source) *Result {
	r := &Result{Spec: cfg.Spec, Sizes: cfg.Sizes}
	prog := progress(cfg)
	fmt.Fprintf(prog, "emq-bench: baseline check: building %s and %s\n", base.Label, tree.Label)
	agentSrc := filepath.Join(cfg.Root, filepath.FromSlash(AgentDir))
	scratch, err := tempdir.New("", "emq-agents-", "emq-agents-")
	if err != nil {
		r.Status, r.Why = Fail, err.Error()
		return r
	}
	defer os.RemoveAll(scratch)
	agents := make([]Agent, 2)
	for i, src := range []Source{base, tree} {
		if src.Dir != cfg.Root {
			if err := Place(agentSrc, src.Dir); err != nil {
				r.Status, r.Why = Fail, err.Error()
				return r
			}
		}
		dir := filepath.Join(scratch, strconv.Itoa(i))
		if err = os.MkdirAll(dir, 0o755); err == nil {
			agents[i], err = Build(ctx, agentSrc, src, filepath.Join(dir, "agent"))
		}
		if err != nil {
			r.Status, r.Why = Fail, err.Error()
			return r
		}
	}
	r.Agents = agents
	r.Metrics = compare(ctx, cfg, agents[0], agents[1], prog)
	r.Status, r.Why = verdict(r.Metrics)
	fmt.Fprintf(prog, "emq-bench: baseline check %s: %s\n", r.Status, r.Why)
	return r
}
