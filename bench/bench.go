// Package bench measures job queues side by side in one run on the same engines: the EchoMQ
// reference bus, BullMQ and asynq on Valkey, River, graphile-worker and pg-boss on PostgreSQL,
// and the kit's Oban-shaped model, each against its engine's own ceiling measured in the same run.
//
// The run is sliced one way: axes (engine durability settings) × scenario families (enqueue,
// drain, latency) × systems (the registry, each offering the scenarios it can run). Every system
// plugs in through queue.Queue; the families know nothing else about them.
package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/bench/baseline"
	"github.com/echomq/kit/bench/internal/vkadmin"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/scale"
	"github.com/echomq/kit/bench/systems/asynqq"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/bench/systems/nodeq"
	"github.com/echomq/kit/bench/systems/riverq"
)

// Scenarios lists every scenario the report must contain, in order (the scale axis aside).
var Scenarios = []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain,
	queue.DrainBacklog, queue.DrainOnce, queue.Latency}

// ScScale names the scale axis (its own engines: it runs once, after the durability axes).
const ScScale = "scale"

// Config is one invocation of the bench.
type Config struct {
	Mode       string
	Overrides  Overrides // replace the mode's producers, workers, pool, backlog, batch or rate
	Durability bool      // add the axis with guarantees matched: Valkey appendfsync always, Postgres synchronous_commit=on
	Only       []string  // run only these scenarios (ceilings always run); empty: all
	Systems    []string  // open only these systems of the registry (the bus+absorb comes with the bus); empty: all
	Progress   io.Writer // progress lines; nil discards
	Gate       *Gate     // thresholds to judge (and re-measure once on a miss); nil: no gate
	// Baseline names the build the gate's baseline check compares the working tree with
	// (BENCH_BASELINE); empty: the last release tag.
	Baseline string
}

// axis is one set of engine settings and the scenarios run on it.
type axis struct {
	name      string
	scenarios []string
	systems   []string // the registry's systems to open (nil: all)
	latencyOn []string // the systems the latency scenario measures (nil: all)
	pg        map[string]string
	valkey    []string
}

// plan resolves the axes and each one's scenarios from the mode and -only.
func plan(cfg Config) ([]axis, bool, error) {
	want := map[string]bool{}
	for _, name := range cfg.Only {
		if !slices.Contains(Scenarios, name) && name != ScScale {
			return nil, false, fmt.Errorf("%w: unknown scenario %q (want one of %s, %s)", ErrParams, name, strings.Join(Scenarios, ", "), ScScale)
		}
		want[name] = true
	}
	selected := func(name string) bool { return len(want) == 0 || want[name] }
	pick := func(from []string) []string {
		var out []string
		for _, s := range from {
			if selected(s) {
				out = append(out, s)
			}
		}
		return out
	}
	axes := []axis{{name: "as-configured", scenarios: pick(Scenarios)}}
	if cfg.Mode == "ci" {
		// CI's budget: a latency round is seconds a system. The gate's latency checks read the
		// bus and the Valkey queues; River is the Postgres queue that keeps up with the offered
		// rate on 2 cores (graphile-worker and pg-boss saturate, the Oban-shaped model is a
		// model). The others' rounds took about 75 s of a 574 s make bench-ci.
		axes[0].latencyOn = []string{busq.Name, nodeq.BullMQ, asynqq.Name, riverq.Name}
	}
	if cfg.Durability {
		// Guarantees matched: every enqueue fsynced before its reply on both sides.
		durable := axis{name: "both-durable", scenarios: pick(Scenarios),
			pg:     map[string]string{"synchronous_commit": "on"},
			valkey: []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}}
		if cfg.Mode == "ci" {
			// CI's budget: the guarantee-matched axis runs what durability changes most, on the
			// bus and the queues it is most often weighed against.
			durable.scenarios = pick([]string{queue.EnqueueConc, queue.EnqueueTx, queue.Drain, queue.DrainOnce})
			durable.systems = []string{busq.Name, nodeq.BullMQ, riverq.Name, nodeq.Graphile, nodeq.PgBoss}
		}
		axes = append(axes, durable)
	}
	axes = slices.DeleteFunc(axes, func(a axis) bool { return len(a.scenarios) == 0 }) // -only scale
	return axes, selected(ScScale), nil
}

// Execute runs every axis and returns the report. Engines are started (or taken as given) per
// axis and stopped before it returns.
func Execute(ctx context.Context, cfg Config) (*Report, error) {
	p, err := ParamsFor(cfg.Mode)
	if err != nil {
		return nil, err
	}
	if p, err = cfg.Overrides.Apply(p); err != nil {
		return nil, err
	}
	axes, withScale, err := plan(cfg)
	if err != nil {
		return nil, err
	}
	for _, name := range cfg.Systems {
		if !slices.ContainsFunc(registry, func(r registered) bool { return r.name == name }) {
			return nil, fmt.Errorf("%w: unknown system %q", ErrParams, name)
		}
	}
	prog := cfg.Progress
	if prog == nil {
		prog = io.Discard
	}
	rep := &Report{Tool: "emq-bench", Started: time.Now().UTC(), Params: p,
		Machine: Machine{Cores: runtime.NumCPU(), CPULimit: measure.CgroupCPULimit(), GOMAXPROCS: runtime.GOMAXPROCS(0), OS: runtime.GOOS,
			Arch: runtime.GOARCH, Go: runtime.Version()}}
	for _, ax := range axes {
		fmt.Fprintf(prog, "emq-bench: axis %s: starting engines\n", ax.name)
		ax.systems = only(ax.systems, cfg.Systems)
		run, infos, err := runAxis(ctx, p, ax, cfg, prog)
		if err != nil {
			return rep, fmt.Errorf("bench: axis %s: %w", ax.name, err)
		}
		if rep.Systems == nil {
			rep.Systems = infos
		}
		run.Targets = Targets(rep, run)
		rep.Runs = append(rep.Runs, run)
	}
	if withScale && len(p.ScalePrimaries) > 0 {
		rep.Scale = scale.Run(ctx, scale.Config{Primaries: p.ScalePrimaries, QueuesPerPrimary: p.ScaleQueues, Workers: p.Workers,
			Parked: busq.Parked, Backlog: p.Backlog, Repeats: p.Repeats}, prog)
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// only narrows an axis's systems (nil: all) to the ones asked for (nil: all).
func only(axis, asked []string) []string {
	switch {
	case asked == nil:
		return axis
	case axis == nil:
		return asked
	}
	return slices.DeleteFunc(slices.Clone(axis), func(s string) bool { return !slices.Contains(asked, s) })
}

// runAxis measures one axis: its scenarios in order over the shared environment, then the gate.
func runAxis(ctx context.Context, p Params, ax axis, cfg Config, prog io.Writer) (*Run, []queue.Info, error) {
	gate := cfg.Gate
	e, err := startEnv(ctx, p, ax, prog)
	if err != nil {
		return nil, nil, err
	}
	defer e.close(ctx)
	var infos []queue.Info
	for _, q := range e.systems {
		infos = append(infos, q.Info())
	}
	measureCeilings(ctx, e)
	for _, name := range ax.scenarios {
		if name != queue.Latency {
			e.measure(ctx, name)
		}
	}
	if slices.Contains(ax.scenarios, queue.Drain) {
		e.profileScripts(ctx) // where the bus's drain time goes
	}
	if slices.Contains(ax.scenarios, queue.Latency) {
		e.reads = setOf(ax.latencyOn)
		e.measure(ctx, queue.Latency)
		e.reads = nil
		if ax.latencyOn != nil && e.run.Latency != nil {
			e.run.Latency.Title += "; ci: on " + strings.Join(ax.latencyOn, ", ") + " only (make bench measures every system)"
		}
	}
	if gate != nil && gate.Axis == ax.name && gate.Baseline != nil {
		e.run.Baseline = e.baselineCheck(ctx, *gate.Baseline, cfg.Baseline)
	}
	if gate != nil && gate.Axis == ax.name {
		e.run.GatePolicy, e.run.GateMaxOutside = gate.Policy, gate.MaxOutside
		e.run.Gate = judge(gate, e.run, func(scenario string) {
			e.waitQuiet(ctx, gate.MaxOutside)
			e.remeasure(ctx, scenario, gate.reads(scenario, e.engines()))
		})
	}
	return e.run, infos, nil
}

// setOf is names as a set (nil: nil).
func setOf(names []string) map[string]bool {
	if names == nil {
		return nil
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// waitQuiet holds a re-measurement, up to three minutes, until the machine's other work
// leaves at most limit of its cores busy: the re-run then has its best chance to be judged.
func (e *env) waitQuiet(ctx context.Context, limit float64) {
	if limit <= 0 {
		return
	}
	share, ok := e.clock.Outside(ctx, 2*time.Second)
	if !ok || share <= limit {
		return
	}
	fmt.Fprintf(e.prog, "emq-bench: gate: %.0f%% of the cores are busy with other work (limit %.0f%%); waiting up to 3 min for a quieter moment\n", 100*share, 100*limit)
	share, _ = e.clock.WaitQuiet(ctx, limit, 5*time.Second, 3*time.Minute)
	fmt.Fprintf(e.prog, "emq-bench: gate: re-measuring at %.0f%% busy with other work\n", 100*share)
}

// baselineCheck compares the working tree's bus with its baseline build on this axis's Valkey
// (bench/baseline), at the run's workers, producers and rate.
func (e *env) baselineCheck(ctx context.Context, spec baseline.Spec, ref string) *baseline.Result {
	fmt.Fprintf(e.prog, "emq-bench: axis %s: the baseline check\n", e.ax.name)
	return baseline.Run(ctx, baseline.Config{Root: kitRoot(), Ref: ref, Valkey: e.vk.Addr, Spec: spec,
		Sizes: spec.SizesOf(e.p.Workers, busq.Parked, e.p.Producers, e.p.Rate), Progress: e.prog,
		Clean: func(ctx context.Context, q string) error { return vkadmin.UnlinkMatch(ctx, e.admin, "emq:{"+q+"}:*") }})
}

// measure runs one scenario's family on the systems that offer it.
func (e *env) measure(ctx context.Context, name string) {
	switch name {
	case queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx:
		e.runEnqueue(ctx, name)
	case queue.Drain:
		e.runDrain(ctx, name, e.p.Backlog, e.p.Repeats)
	case queue.DrainBacklog:
		for _, n := range e.p.BacklogSizes {
			e.runDrain(ctx, name, n, 1)
		}
	case queue.DrainOnce:
		e.runDrainOnce(ctx)
	case queue.Latency:
		e.runLatency(ctx)
	}
}

// systemsFor lists the systems that offer scenario: the one place the run is sliced by system.
func (e *env) systemsFor(scenario string) []queue.Queue {
	var out []queue.Queue
	for _, q := range e.systems {
		if q.Info().Runs(scenario) && (e.reads == nil || e.reads[q.Info().Name]) {
			out = append(out, q)
		}
	}
	return out
}

// remeasure measures scenario once more for the gate. The latency scenario is measured again on
// the systems its checks read (the bus and the rivals they name), the others keeping their first
// rows, marked so: a round of each of the rest would add minutes to every re-run and change no
// verdict. Throughput scenarios are measured again whole (their checks read every system).
func (e *env) remeasure(ctx context.Context, scenario string, reads map[string]bool) {
	if scenario != queue.Latency || e.run.Latency == nil || len(reads) == 0 {
		fmt.Fprintf(e.prog, "emq-bench: gate: %s missed a threshold; measuring it once more\n", scenario)
		e.run.drop(scenario)
		e.measure(ctx, scenario)
		return
	}
	first := e.run.Latency
	fmt.Fprintf(e.prog, "emq-bench: gate: %s missed a threshold; measuring it once more on %s\n", scenario, strings.Join(slices.Sorted(maps.Keys(reads)), ", "))
	e.run.drop(scenario)
	e.reads = reads
	e.measure(ctx, scenario)
	e.reads = nil
	if ls := e.run.Latency; ls != nil {
		ls.Results = keepFirst(ls.Results, first.Results, reads)
		ls.Ratios = latencyRatios(ls.Results, e.engines(), e.models())
	}
}

// keepFirst appends the first measurement's rows of the systems the re-run did not measure.
func keepFirst(again, first []*LatencyResult, measured map[string]bool) []*LatencyResult {
	for _, r := range first {
		if !measured[r.System] {
			r.FirstTry = true
			r.Limit += " (the first measurement's figures: the gate's re-run measured only the systems its checks read)"
			again = append(again, r)
		}
	}
	return again
}

// drop forgets a scenario's figures before it is measured again.
func (run *Run) drop(scenario string) {
	if run.Latency != nil && run.Latency.Name == scenario {
		run.Latency = nil
	}
	run.Scenarios = slices.DeleteFunc(run.Scenarios, func(s *Scenario) bool { return s.Name == scenario })
}
