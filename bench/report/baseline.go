package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/baseline"
	"github.com/echomq/kit/bench/measure"
)

// writeBaseline is the gate's check of the bus against its baseline build.
func writeBaseline(w io.Writer, r *baseline.Result) {
	fmt.Fprintf(w, "baseline check: %s\n", baselineHeadline(r))
	if len(r.Agents) == 2 {
		s := r.Spec
		fmt.Fprintf(w, "  both built from source with the agent of %s (adapters: baseline %q, tree %q), run interleaved on this run's Valkey,\n",
			baseline.AgentDir, r.Agents[0].Adapter, r.Agents[1].Adapter)
		fmt.Fprintf(w, "  %d rounds each: drain of %d jobs, enqueue for %gs from %d producers, latency for %gs at %.0f jobs/s (%d workers, %d parked);\n",
			s.Repeats, r.Sizes.Backlog, r.Sizes.EnqueueSeconds, r.Sizes.Producers, r.Sizes.LatencySeconds, r.Sizes.Rate, r.Sizes.Workers, r.Sizes.Parked)
		fmt.Fprintf(w, "  a metric fails when the tree is worse than the baseline moved by its margin, with confidence: Mann–Whitney U test\n")
		fmt.Fprintf(w, "  (golang.org/x/perf/benchmath, benchstat's) of the tree's rounds against the moved baseline's, p < %g; %.0fs\n", s.Alpha, r.Seconds)
	}
	if len(r.Metrics) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  metric\tbaseline median (min–max)\ttree median (min–max)\tchange\tp\tmargin\tp beyond the margin\tverdict\n")
		for _, m := range r.Metrics {
			v := "PASS"
			if m.Worse {
				v = "FAIL"
			}
			if len(m.Errors) > 0 {
				v += fmt.Sprintf(" (%d rounds failed)", len(m.Errors))
			}
			if m.Behind > 0 {
				v += fmt.Sprintf(" (%d rounds saturated: the generator fell behind)", m.Behind)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%+.1f%%\t%.3g\t%.0f%% %s\t%.3g\t%s\n", m.Name, spreadText(m.Base), spreadText(m.Tree),
				100*m.Change, m.P, 100*m.Margin, worseWord(m.Higher), m.PBeyond, v)
		}
		tw.Flush()
	}
	if r.Status != baseline.Pass {
		fmt.Fprintf(w, "BASELINE %s: %s\n", r.Status, r.Why)
	}
}

func baselineHeadline(r *baseline.Result) string {
	switch {
	case r.Status == baseline.NotRun:
		return "NOT RUN — the bus was NOT compared with a baseline build: " + r.Why
	case len(r.Agents) < 2:
		return fmt.Sprintf("%s — %s", r.Status, r.Why)
	}
	return fmt.Sprintf("%s — the working tree (%s) against %s %s (%s)", r.Status, r.Tree, r.Ref.How, r.Ref.Name, short(r.Ref.Commit))
}

func short(c string) string { return c[:min(len(c), 10)] }

func worseWord(higher bool) string {
	if higher {
		return "lower"
	}
	return "higher"
}

func spreadText(xs []float64) string {
	if len(xs) == 0 {
		return "none"
	}
	s := measure.SpreadOf(xs)
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// gateLine is the axis's verdict as the last line of its gate section.
func gateLine(run *bench.Run) string {
	v := "GATE PASS"
	switch n := bench.NotJudged(run.Gate); {
	case !run.GatePass():
		v = "GATE FAIL"
	case n > 0:
		v = fmt.Sprintf("GATE NOT JUDGED — %d of %d checks missed with no evidence either way (a machine busier than the thresholds speak for, more than %.0f%% of its cores busy with other work, or a rival that could not keep up with the offered rate while the bus did); the others passed",
			n, len(run.Gate), 100*run.GateMaxOutside)
	}
	if b := run.Baseline; b != nil && b.Status == baseline.NotRun {
		v += " — the ratio checks only: the baseline check did NOT RUN (" + strings.TrimSuffix(b.Why, ".") + ")"
	}
	return v
}
