// Package report writes what the bench measured: bench.out (the text of record CI reads),
// bench.json, bench.html (one self-contained page) and an SVG of each latency scenario, all
// from a bench.Report alone, so an old bench.json can be redrawn.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
)

// Section headings of bench.out; the structure test looks for them.
const (
	HeadAsymmetry = "== THE ASYMMETRY"
	HeadCeilings  = "== CEILINGS"
	HeadScenario  = "== SCENARIO "
	HeadBacklog   = "== BACKLOG AXIS"
	HeadGaps      = "== GAPS"
	HeadScripts   = "== BUS SCRIPTS"
	HeadTail      = "== WHERE THE BUS'S TAIL COMES FROM"
	HeadTargets   = "== TARGETS"
	HeadBounds    = "== WHERE THE TIME GOES"
	HeadGate      = "== GATE"
	HeadScale     = "== SCALE"
)

// WriteAll writes bench.out, bench.json, bench.html and one SVG per latency scenario into dir.
func WriteAll(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var txt, page strings.Builder
	WriteText(&txt, rep)
	WriteHTML(&page, rep)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	files := map[string]string{"bench.out": txt.String(), "bench.json": string(js) + "\n", "bench.html": page.String()}
	for _, run := range rep.Runs {
		if run.Latency != nil {
			var svg strings.Builder
			WriteLatencySVG(&svg, run.Latency, run.Axis)
			files[run.Latency.PlotFile] = svg.String()
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes the human report. The asymmetry comes first, before any figure.
func WriteText(w io.Writer, rep *bench.Report) {
	fmt.Fprintf(w, "EchoMQ bench — mode %s — %s — %.0fs\n\n", rep.Params.Mode, rep.Started.Format("2006-01-02 15:04:05Z"), rep.Seconds)
	for _, run := range rep.Runs {
		writeAsymmetry(w, rep, run)
	}
	for _, run := range rep.Runs {
		writeCeilings(w, run)
		for _, s := range run.Scenarios {
			if s.Name != queue.DrainBacklog {
				writeScenario(w, run, s)
			}
		}
		writeBacklog(w, run)
		writeScripts(w, run)
		writeLatency(w, run)
		writeTargets(w, run)
		writeGate(w, run)
		writeBounds(w, rep, run)
		writeGaps(w, run)
	}
	writeScale(w, rep)
}

func writeCeilings(w io.Writer, run *bench.Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadCeilings, run.Axis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ceiling\tengine\tops/s (median)\tspread\tcpu\twhat\n")
	for _, c := range run.Ceilings {
		if c.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\terror\t\t\t%s: %s\n", c.Name, c.Engine, c.What, c.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f–%.0f\t%s\t%s\n", c.Name, c.Engine, c.Rate.Median, c.Rate.Min, c.Rate.Max, cpuText(c.CPU), c.What)
	}
	tw.Flush()
	fmt.Fprintf(w, "\"of engine ceiling\" below = jobs/s ÷ the named ceiling's ops/s; above 1× means more than one job per commit (batches).\n\n")
}

func writeScenario(w io.Writer, run *bench.Run, s *bench.Scenario) {
	fmt.Fprintf(w, "%s%s — axis %s ==\n%s\n", HeadScenario, s.Name, run.Axis, s.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "system\tengine\tjobs/s (median)\tspread (min–max)\trepeats\tof engine ceiling\tcpu\n")
	for _, r := range s.Results {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\terror\t\t\t%s\t\n", r.System, r.Engine, r.Err)
			continue
		}
		frac := "n/a"
		if r.Fraction > 0 {
			frac = fmt.Sprintf("%.2f× %s", r.Fraction, r.Ceiling)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f–%.0f\t%d\t%s\t%s\n", r.System, r.Engine, r.JobsPerS.Median, r.JobsPerS.Min, r.JobsPerS.Max, len(r.JobsPerS.Repeats), frac, cpuText(r.CPU))
	}
	tw.Flush()
	for _, r := range s.Results {
		if r.Server != nil {
			fmt.Fprintf(w, "valkey (INFO commandstats): %d EVALSHA, %.2f µs each, %.2f µs of script per job; scripts filled %.0f%% of the wall time\n",
				r.Server.Calls, r.Server.UsecPerCall, r.Server.UsecPerJob, 100*r.Server.ScriptShare)
		}
	}
	var su []string
	for _, r := range s.Results {
		if r.Startup != nil {
			su = append(su, fmt.Sprintf("%s %.0f ms", r.System, r.Startup.Median))
		}
	}
	if len(su) > 0 {
		fmt.Fprintf(w, "start-up before the first handler (median, outside the window): %s\n", strings.Join(su, ", "))
	}
	writeRatios(w, s.Ratios, "jobs/s medians; above 1: the bus moved more")
	fmt.Fprintln(w)
}

// writeBacklog is the backlog axis: one row per system, one column per backlog size.
func writeBacklog(w io.Writer, run *bench.Run) {
	ss := run.Backlogs()
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "%s — axis %s: the drain at growing backlogs (%d workers each, one round per size) ==\n", HeadBacklog, run.Axis, ss[0].Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "system\tengine"
	for _, s := range ss {
		head += "\t" + human(float64(s.Backlog)) + " jobs/s"
	}
	fmt.Fprintln(tw, head+"\tlargest ÷ smallest")
	for _, sys := range backlogSystems(ss) {
		row := sys.System + "\t" + string(sys.Engine)
		var first, last float64
		for _, s := range ss {
			cell := "not measured"
			if r := s.Result(sys.System); r != nil {
				cell = fmt.Sprintf("%.0f", r.JobsPerS.Median)
				if first == 0 {
					first = r.JobsPerS.Median
				}
				last = r.JobsPerS.Median
			} else if e := resultErr(s, sys.System); e != "" {
				cell = "error"
			}
			row += "\t" + cell
		}
		ratio := "n/a"
		if first > 0 && last > 0 {
			ratio = fmt.Sprintf("%.2f", last/first)
		}
		fmt.Fprintln(tw, row+"\t"+ratio)
	}
	tw.Flush()
	for _, s := range ss {
		for _, r := range s.Results {
			if r.Err != "" {
				fmt.Fprintf(w, "%s at %s: error: %s\n", r.System, human(float64(s.Backlog)), r.Err)
			}
		}
		writeRatios(w, s.Ratios, fmt.Sprintf("at %s jobs", human(float64(s.Backlog))))
	}
	fmt.Fprintln(w)
}

// backlogSystems lists every system of the backlog axis once, in result order.
func backlogSystems(ss []*bench.Scenario) []*bench.Result {
	seen := map[string]bool{}
	var out []*bench.Result
	for _, s := range ss {
		for _, r := range s.Results {
			if !seen[r.System] {
				seen[r.System] = true
				out = append(out, r)
			}
		}
	}
	return out
}

func resultErr(s *bench.Scenario, system string) string {
	for _, r := range s.Results {
		if r.System == system {
			return r.Err
		}
	}
	return ""
}

func writeScripts(w io.Writer, run *bench.Run) {
	if len(run.Scripts) == 0 {
		return
	}
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadScripts, run.Axis)
	fmt.Fprintf(w, "The drain's scripts alone, server time from INFO commandstats (Valkey runs scripts on one thread);\n")
	fmt.Fprintf(w, "jobs per call as measured (enqueue_batch by Bus.EnqueueBatch; claim_batch/complete_batch by their batchers):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "script\tjobs\tcalls\tjobs per call\tµs per call\tµs per job\tscript-only ceiling (jobs/s)\n")
	for _, c := range run.Scripts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.0f\n", c.Script, c.Jobs, c.Calls, float64(c.Jobs)/float64(max(c.Calls, 1)), c.UsecPerCall, c.UsecPerJob, 1e6/c.UsecPerJob)
	}
	tw.Flush()
	for _, pair := range [][2]string{{"claim_batch", "complete_batch"}, {"claim", "complete"}} {
		if cl, co := run.ScriptCost(pair[0]), run.ScriptCost(pair[1]); cl > 0 && co > 0 {
			fmt.Fprintf(w, "%s + %s = %.2f µs per job: a drain on these scripts cannot pass %.0f jobs/s on one Valkey thread, whatever the client.\n",
				pair[0], pair[1], cl+co, 1e6/(cl+co))
		}
	}
	fmt.Fprintln(w)
}

func writeLatency(w io.Writer, run *bench.Run) {
	ls := run.Latency
	if ls == nil {
		return
	}
	fmt.Fprintf(w, "%s%s — axis %s ==\n%s; plot: %s\n", HeadScenario, ls.Name, run.Axis, ls.Title, ls.PlotFile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "system\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\tp99 per round ms (median)\tjobs\tsent in\tsender late p50/p99 ms\tcpu\n")
	for _, r := range ls.Results {
		if r.Err != "" && r.Latency.Count == 0 {
			fmt.Fprintf(tw, "%s\terror\t\t\t\t\t\t\t\t%s\n", r.System, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s (%s)\t%d/%d\t%.1fs\t%.2f/%.2f\t%s\n", r.System, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max,
			roundP99s(r), medianText(r), r.Received, r.Offered, r.SendSeconds, r.SenderLate.P50, r.SenderLate.P99, cpuText(r.CPU))
		if r.Err != "" {
			fmt.Fprintf(tw, "\t(error: %s)\n", r.Err)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "p50, p99, p99.9, max: every round's samples together; the ratios and the gate use the median of the rounds' p99s.")
	fmt.Fprintln(w, "sender late: how late the open-loop generator handed each job to Enqueue; it is inside every latency above, for every system alike.")
	fmt.Fprintf(w, "A round marked * was SATURATED: its enqueues overran the round by more than a tenth, or the generator handed jobs on more than %v late\n", bench.LateBound)
	fmt.Fprintln(w, "at p99; its p99 is a backlog, not a latency, and is left out of the median. What held each system (the limit when most rounds saturated):")
	for _, r := range ls.Results {
		if r.Limit != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.System, r.Limit)
		}
	}
	writeRatios(w, ls.Ratios, "below 1: the bus was faster")
	fmt.Fprintln(w)
	writeTail(w, run)
}

// roundP99s prints each round's p99, a saturated round marked *.
func roundP99s(r *bench.LatencyResult) string {
	var parts []string
	for i, x := range r.RoundP99 {
		p := fmt.Sprintf("%.2f", x)
		if i < len(r.RoundSaturated) && r.RoundSaturated[i] {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/")
}

func medianText(r *bench.LatencyResult) string {
	if r.Saturated {
		return "saturated"
	}
	return fmt.Sprintf("%.2f", r.P99Median)
}

func writeTargets(w io.Writer, run *bench.Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadTargets, run.Axis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "goal\tmeasured\tverdict\n")
	for _, t := range run.Targets {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Goal, t.Measured, t.Verdict())
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func writeGaps(w io.Writer, run *bench.Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadGaps, run.Axis)
	if len(run.Gaps) == 0 {
		fmt.Fprintf(w, "none: every system measured\n\n")
		return
	}
	for _, g := range run.Gaps {
		fmt.Fprintf(w, "%s\n", g)
	}
	fmt.Fprintln(w)
}

func writeRatios(w io.Writer, rs []measure.Ratio, note string) {
	if len(rs) == 0 {
		fmt.Fprintf(w, "ratios: n/a (a system is missing or failed)\n")
		return
	}
	fmt.Fprintf(w, "ratios: %s (%s)\n", ratiosText(rs), note)
}

func ratiosText(rs []measure.Ratio) string {
	var parts []string
	for _, r := range rs {
		s := fmt.Sprintf("%s = %.2f", r.Name, r.Value)
		if r.Rival != "" {
			s += " (" + r.Rival + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// cpuText renders cores busy as bench/valkey/postgres/machine; "n/a" is unknown.
func cpuText(c *measure.CPU) string {
	if c == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f/%s/%s/%s out %s", c.Bench, opt(c.Valkey), opt(c.Postgres), opt(c.Machine), pct(c.Outside))
}

func pct(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100**v)
}

func opt(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *v)
}

// busyNote flags a run taken on a loaded machine.
func busyNote(outside float64) string {
	if outside > 0.15 {
		return " — the machine was BUSY: figures are low and noisy; ratios within the run still compare"
	}
	return " (a quiet machine)"
}

// coresText prints the machine's cores and its cgroup CPU limit.
func coresText(m bench.Machine) string {
	limit := "no cgroup CPU limit"
	if m.CPULimit > 0 {
		limit = fmt.Sprintf("cgroup CPU limit %.2f cores", m.CPULimit)
	}
	return fmt.Sprintf("%d cores (runtime.NumCPU), %s", m.Cores, limit)
}
