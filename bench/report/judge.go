package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/queue"
)

func writeGate(w io.Writer, run *bench.Run) {
	if len(run.Gate) == 0 && run.Baseline == nil {
		return
	}
	fmt.Fprintf(w, "%s — axis %s (same-run ratios and the baseline check, against bench/gate.json) ==\n", HeadGate, run.Axis)
	if run.GatePolicy != "" {
		fmt.Fprintf(w, "re-run policy: %s\n", run.GatePolicy)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\tratio\tthreshold\tmeasured\tverdict\twhy\n")
	for _, r := range run.Gate {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Ratio, r.Threshold(), gateValue(r), gateVerdict(r), r.Why)
	}
	tw.Flush()
	if run.Baseline != nil {
		writeBaseline(w, run.Baseline)
	}
	fmt.Fprintf(w, "%s\n\n", gateLine(run))
}

func gateValue(r bench.GateResult) string {
	if !r.Found {
		return "not measured"
	}
	if r.Rival != "" {
		return fmt.Sprintf("%.2f (%s)", r.Value, r.Rival)
	}
	return fmt.Sprintf("%.2f", r.Value)
}

func gateVerdict(r bench.GateResult) string {
	v := "PASS"
	switch {
	case r.NotJudged:
		v = fmt.Sprintf("NOT JUDGED (%s)", r.NotJudgedWhy)
	case !r.Pass:
		v = "FAIL"
	}
	if r.Reruns > 0 {
		v += fmt.Sprintf(" (after %d re-run)", r.Reruns)
	}
	return v
}

// writeBounds says, for the scenarios that decide the targets, what held each system back:
// the machine's cores, Valkey's one script thread, or waiting (round trips, commits, cooldowns).
func writeBounds(w io.Writer, rep *bench.Report, run *bench.Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadBounds, run.Axis)
	cores := float64(rep.Machine.Cores)
	for _, name := range []string{queue.Drain, queue.EnqueueConc, queue.EnqueueBatch} {
		s := run.Scenario(name)
		if s == nil {
			continue
		}
		for _, r := range s.Results {
			if r.Err != "" || r.CPU == nil {
				continue
			}
			fmt.Fprintf(w, "%s, %s: %.0f jobs/s; cores busy: bench %.2f, valkey %s, postgres %s, machine %s of %.0f",
				name, r.System, r.JobsPerS.Median, r.CPU.Bench, opt(r.CPU.Valkey), opt(r.CPU.Postgres), opt(r.CPU.Machine), cores)
			if r.Server != nil {
				fmt.Fprintf(w, "; valkey in scripts %.2f µs/job (%.0f%% of the wall time)", r.Server.UsecPerJob, 100*r.Server.ScriptShare)
			}
			fmt.Fprintf(w, "\n  → %s\n", verdict(r, cores))
		}
	}
	fmt.Fprintln(w)
}

func verdict(r *bench.Result, cores float64) string {
	c := r.CPU
	if c.Valkey != nil && *c.Valkey >= 0.85 {
		if r.Server != nil && r.Server.ScriptShare >= 0.6 {
			return fmt.Sprintf("bound by Valkey's one main thread (%.2f cores), mostly inside the scripts: faster scripts move this figure", *c.Valkey)
		}
		return fmt.Sprintf("bound by Valkey's one main thread (%.2f cores): scripts plus network I/O and parsing", *c.Valkey)
	}
	if c.Valkey != nil && *c.Valkey >= 0.6 {
		note := ""
		if r.Server != nil {
			note = fmt.Sprintf(", %.0f%% of the wall time inside scripts", 100*r.Server.ScriptShare)
		}
		return fmt.Sprintf("mostly Valkey's one main thread: busy %.2f cores%s; it is the next bound once it gets a core to itself", *c.Valkey, note)
	}
	if c.Machine == nil || *c.Machine < 0.8*cores {
		return "not CPU-bound: the time goes to waiting — round trips, commit fsyncs, fetch cooldowns or polls"
	}
	return saturated(c.Bench, c.Valkey, c.Postgres, *c.Machine, cores)
}

// saturated names the largest share of saturated cores, and the outside processes' share.
func saturated(bench float64, valkey, postgres *float64, machine, cores float64) string {
	type part struct {
		name string
		v    float64
	}
	parts := []part{{"the bench process (load generator and every client side)", bench}}
	own := bench
	if valkey != nil {
		parts = append(parts, part{"valkey", *valkey})
		own += *valkey
	}
	if postgres != nil {
		parts = append(parts, part{"postgres", *postgres})
		own += *postgres
	}
	big := parts[0]
	for _, p := range parts[1:] {
		if p.v > big.v {
			big = p
		}
	}
	other := max(machine-own, 0)
	if own < 0.75*cores {
		return fmt.Sprintf("the cores were saturated, but %.2f of them by processes outside this bench: this figure is held down by the shared machine (of its own %.2f cores, the largest share is %s, %.2f)", other, own, big.name, big.v)
	}
	return fmt.Sprintf("CPU-bound: the cores are saturated, the largest share by %s (%.2f cores); outside processes %.2f", big.name, big.v, other)
}
