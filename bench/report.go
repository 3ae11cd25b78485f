package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
)

// Section headings of bench.out; the structure test looks for them.
const (
	HeadAsymmetry = "== THE ASYMMETRY"
	HeadCeilings  = "== CEILINGS"
	HeadScenario  = "== SCENARIO "
	HeadGaps      = "== GAPS"
	HeadScripts   = "== BUS SCRIPTS"
	HeadTargets   = "== TARGETS"
	HeadBounds    = "== WHERE THE TIME GOES"
)

func buildVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return ""
}

// WriteAll writes bench.out, bench.json and one SVG per latency scenario into dir.
func WriteAll(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var txt strings.Builder
	WriteText(&txt, rep)
	if err := os.WriteFile(filepath.Join(dir, "bench.out"), []byte(txt.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var page strings.Builder
	WriteHTML(&page, rep)
	if err := os.WriteFile(filepath.Join(dir, "bench.html"), []byte(page.String()), 0o644); err != nil {
		return err
	}
	for _, run := range rep.Runs {
		if run.Latency == nil {
			continue
		}
		var svg strings.Builder
		WriteLatencySVG(&svg, run.Latency, run.Axis)
		if err := os.WriteFile(filepath.Join(dir, run.Latency.PlotFile), []byte(svg.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes the human report. The asymmetry comes first, before any figure.
func WriteText(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "EchoMQ bench — mode %s — %s — %.0fs\n\n", rep.Params.Mode, rep.Started.Format("2006-01-02 15:04:05Z"), rep.Seconds)
	for _, run := range rep.Runs {
		writeAsymmetry(w, rep, run)
	}
	for _, run := range rep.Runs {
		writeFigures(w, rep, run)
	}
	writeScale(w, rep)
}

func writeAsymmetry(w io.Writer, rep *Report, run *Run) {
	var pg, vk EngineInfo
	for _, e := range run.Engines {
		if e.Engine == Postgres {
			pg = e
		} else {
			vk = e
		}
	}
	fmt.Fprintf(w, "%s — axis %s (read this before any figure) ==\n\n", HeadAsymmetry, run.Axis)
	fmt.Fprintf(w, "What each side promises when an enqueue returns:\n\n")
	sc := pg.setting("synchronous_commit")
	pgDurable := "the job row is in the WAL and fsynced (fsync=" + pg.setting("fsync") + ", wal_sync_method=" + pg.setting("wal_sync_method") + ") before COMMIT returns"
	if sc == "off" {
		pgDurable = "COMMIT returns before the WAL is flushed (synchronous_commit=off): a crash can lose the last few hundred ms of committed jobs, without corruption"
	}
	fmt.Fprintf(w, "  Postgres (oban-shaped, river): synchronous_commit=%s — %s.\n", sc, pgDurable)
	fmt.Fprintf(w, "    The job commits atomically with business rows written in the same transaction\n")
	fmt.Fprintf(w, "    (InsertTx): the row and its job exist together or not at all.\n")
	aof := vk.setting("appendonly")
	var bus string
	switch {
	case aof == "yes" && vk.setting("appendfsync") == "always":
		bus = "appendonly yes, appendfsync always: the enqueue is written and fsynced to the AOF before the reply"
	case aof == "yes":
		bus = "appendonly yes, appendfsync " + vk.setting("appendfsync") + ": the AOF is fsynced on that policy, not per enqueue; a crash can lose the last ~second"
	default:
		bus = "appendonly no, save " + vk.setting("save") + ": the job lives in memory only and is lost on a crash or restart"
	}
	fmt.Fprintf(w, "  Bus and BullMQ (the same Valkey): %s.\n", bus)
	fmt.Fprintf(w, "    A plain enqueue is not atomic with any store: a business row in PostgreSQL and its job\n")
	fmt.Fprintf(w, "    are two systems. The bus gets Oban's atomicity through an outbox (reference/outbox: the job\n")
	fmt.Fprintf(w, "    is an outbox row in the business transaction, relayed to the bus under an id minted at commit,\n")
	fmt.Fprintf(w, "    so a relay crash re-sends and the idempotent enqueue keeps one job): enqueue-transactional.\n")
	fmt.Fprintf(w, "    Delivery is at least once on every side; an exactly-once effect needs the handler's effect and\n")
	fmt.Fprintf(w, "    the job id in one PostgreSQL transaction (reference/absorb): drain-exactly-once.\n\n")
	fmt.Fprintf(w, "Engines:\n")
	for _, e := range run.Engines {
		var kv []string
		for _, s := range e.Settings {
			kv = append(kv, s[0]+"="+s[1])
		}
		fmt.Fprintf(w, "  %-8s %s (%s): %s\n", e.Engine, e.Version, e.Mode, strings.Join(kv, " "))
	}
	p := rep.Params
	fmt.Fprintf(w, "Same conditions for every system: %d producers (enqueue-concurrent, transactional, latency senders),\n", p.Producers)
	fmt.Fprintf(w, "  %d worker slots (drain, latency), one pgx pool of %d connections shared by every Postgres system,\n", p.Workers, p.PGPool)
	fmt.Fprintf(w, "  the pg-commit-n ceiling and the bus's business rows; empty handlers; one process drives all of them.\n")
	fmt.Fprintf(w, "Systems:\n")
	fmt.Fprintf(w, "  %s: %s;\n    producer model: limit=%d, dispatch_cooldown=%v, fetch of limit−running per dispatch, one ack UPDATE (commit) per job\n",
		SysOban, rep.Versions.Oban, p.Workers, obanDispatchCooldown)
	fmt.Fprintf(w, "  %s: %s;\n    MaxWorkers=%d, FetchCooldown=%v, FetchPollInterval=%v (River's own benchmark settings), default batch completer\n",
		SysRiver, rep.Versions.River, p.Workers, RiverFetchCooldown, RiverFetchPollInterval)
	fmt.Fprintf(w, "  %s: %s;\n    bus.Options{BatchEnqueue: true} (concurrent enqueues coalesce into enqueue_batch); bus.Consumer with\n    Concurrency=%d on the bus's one auto-pipelined connection, claiming and completing by their batchers\n    (claim_batch/complete_batch, two calls in flight; at most %d idle slots park on the wake key, the rest wait in-process); batches through Bus.EnqueueBatch\n",
		SysBus, rep.Versions.Bus, p.Workers, busParked)
	if b := run.BullMQ; b != nil {
		var kv []string
		for _, s := range b.Settings {
			kv = append(kv, s[0]+"="+s[1])
		}
		fmt.Fprintf(w, "  %s: bullmq %s, ioredis %s on Node.js %s, driven in its own process (bench/bullmq/driver.js: each scenario runs\n    inside Node, no hop per job; its CPU is counted on the bench side); Worker concurrency=%d; %s\n",
			SysBullMQ, b.Versions["bullmq"], b.Versions["ioredis"], b.Versions["node"], p.Workers, strings.Join(kv, ", "))
	}
	fmt.Fprintf(w, "Machine: %s (GOMAXPROCS %d), %s/%s, %s. The engines and the load generator share these cores;\n",
		coresText(rep.Machine), rep.Machine.GOMAXPROCS, rep.Machine.OS, rep.Machine.Arch, rep.Machine.Go)
	fmt.Fprintf(w, "  \"cpu\" columns are cores kept busy (CPU s ÷ wall s): bench process (load + every client side) / valkey / postgres / whole machine,\n")
	fmt.Fprintf(w, "  then \"out\": the share of all cores busy with work that is not this run's (other users of the machine).\n")
	fmt.Fprintf(w, "  Load while measuring: median outside share %.0f%%%s.\n", 100*rep.Outside(), busyNote(rep.Outside()))
	fmt.Fprintf(w, "Durations: %v per timed repeat, %d repeats (median, min–max shown); drain backlog %d, timed from the first handler\n",
		p.Duration, p.Repeats, p.Backlog)
	fmt.Fprintf(w, "  start to the last recorded ack (backlog insertion and client start-up outside the window); latency %v at %.0f jobs/s offered.\n",
		p.LatencyDuration, p.Rate)
	fmt.Fprintf(w, "Latency method: open loop; each job carries its intended send instant and latency is counted from it,\n")
	fmt.Fprintf(w, "so a stalled sender cannot hide queueing delay (coordinated omission); HdrHistogram, 3 significant digits.\n\n")
}

func writeFigures(w io.Writer, rep *Report, run *Run) {
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
	for _, s := range run.Scenarios {
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
	if len(run.Scripts) > 0 {
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
			if cl, co := scriptCost(run, pair[0]), scriptCost(run, pair[1]); cl > 0 && co > 0 {
				fmt.Fprintf(w, "%s + %s = %.2f µs per job: a drain on these scripts cannot pass %.0f jobs/s on one Valkey thread, whatever the client.\n",
					pair[0], pair[1], cl+co, 1e6/(cl+co))
			}
		}
		fmt.Fprintln(w)
	}
	if ls := run.Latency; ls != nil {
		fmt.Fprintf(w, "%s%s — axis %s ==\n%s; plot: %s\n", HeadScenario, ls.Name, run.Axis, ls.Title, ls.PlotFile)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "system\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\tjobs\tsent in\tsender late p50/p99 ms\tcpu\n")
		for _, r := range ls.Results {
			if r.Err != "" && r.Latency.Count == 0 {
				fmt.Fprintf(tw, "%s\terror\t\t\t\t\t%s\t\n", r.System, r.Err)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%.1fs\t%.2f/%.2f\t%s\n", r.System, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Received, r.Offered, r.SendSeconds, r.SenderLate.P50, r.SenderLate.P99, cpuText(r.CPU))
			if r.Err != "" {
				fmt.Fprintf(tw, "\t(error: %s)\n", r.Err)
			}
		}
		tw.Flush()
		fmt.Fprintln(w, "sender late: how late the open-loop generator handed each job to Enqueue; it is inside every latency above, for every system alike.")
		writeRatios(w, ls.Ratios, "below 1: the bus was faster")
		fmt.Fprintln(w)
	}
	writeTargets(w, rep, run)
	writeGate(w, run)
	writeBounds(w, rep, run)
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadGaps, run.Axis)
	if len(run.Gaps) == 0 {
		fmt.Fprintf(w, "none: every system measured\n\n")
	}
	for _, g := range run.Gaps {
		fmt.Fprintf(w, "%s\n", g)
	}
	if len(run.Gaps) > 0 {
		fmt.Fprintln(w)
	}
}

// cpuText renders cores busy as bench/valkey/postgres/machine; "?" is unknown.
func cpuText(c *CPU) string {
	if c == nil {
		return "?"
	}
	f := func(v *float64) string {
		if v == nil {
			return "?"
		}
		return fmt.Sprintf("%.2f", *v)
	}
	return fmt.Sprintf("%.2f/%s/%s/%s out %s", c.Bench, f(c.Valkey), f(c.Postgres), f(c.Machine), pct(c.Outside))
}

func pct(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100**v)
}

// busyNote flags a run taken on a loaded machine.
func busyNote(outside float64) string {
	if outside > 0.15 {
		return " — the machine was BUSY: figures are low and noisy; ratios within the run still compare"
	}
	return " (a quiet machine)"
}

func scriptCost(run *Run, name string) float64 {
	for _, c := range run.Scripts {
		if c.Script == name {
			return c.UsecPerJob
		}
	}
	return 0
}

func (run *Run) scenario(name string) *Scenario {
	for _, s := range run.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (s *Scenario) result(system string) *Result {
	if s == nil {
		return nil
	}
	for _, r := range s.Results {
		if r.System == system && r.Err == "" && r.JobsPerS.Median > 0 {
			return r
		}
	}
	return nil
}

// Target is one of the bench's performance goals, checked against this run's medians.
type Target struct {
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Met      bool    `json:"met"`
	Value    float64 `json:"value"`
}

// Targets checks the performance goals against one run. A goal whose figure is missing is not met.
func Targets(rep *Report, run *Run) []Target {
	var out []Target
	drain := run.scenario(ScDrain)
	bus, river, ob, mq := drain.result(SysBus), drain.result(SysRiver), drain.result(SysOban), drain.result(SysBullMQ)
	add := func(goal string, ok bool, v float64, measured string) {
		out = append(out, Target{Goal: goal, Measured: measured, Met: ok, Value: v})
	}
	missing := "not measured"
	if bus != nil {
		add("bus drain ≥ 50000 jobs/s", bus.JobsPerS.Median >= 50000, bus.JobsPerS.Median, fmt.Sprintf("%.0f jobs/s", bus.JobsPerS.Median))
	} else {
		add("bus drain ≥ 50000 jobs/s", false, 0, missing)
	}
	for _, o := range []struct {
		r    *Result
		name string
		x    float64
	}{{mq, SysBullMQ, 3}, {river, SysRiver, 2.5}, {ob, SysOban, 10}} {
		goal := fmt.Sprintf("bus drain ≥ %g× %s", o.x, o.name)
		if bus == nil || o.r == nil {
			add(goal, false, 0, missing)
			continue
		}
		v := bus.JobsPerS.Median / o.r.JobsPerS.Median
		add(goal, v >= o.x, v, fmt.Sprintf("%.2f× (%.0f vs %.0f jobs/s)", v, bus.JobsPerS.Median, o.r.JobsPerS.Median))
	}
	if e := run.scenario(ScEnqueueConc).result(SysBus); e != nil {
		add(fmt.Sprintf("bus enqueue ≥ 100000 jobs/s from %d concurrent producers", rep.Params.Producers), e.JobsPerS.Median >= 100000, e.JobsPerS.Median, fmt.Sprintf("%.0f jobs/s", e.JobsPerS.Median))
	} else {
		add("bus enqueue ≥ 100000 jobs/s from concurrent producers", false, 0, missing)
	}
	goal := "bus end-to-end p99 ≤ 1 ms at 1000 jobs/s offered"
	var lat *LatencyResult
	if run.Latency != nil {
		for _, r := range run.Latency.Results {
			if r.System == SysBus && r.Err == "" && r.Latency.Count > 0 {
				lat = r
			}
		}
	}
	switch {
	case lat == nil:
		add(goal, false, 0, missing)
	case run.Latency.Rate != 1000:
		add(goal, false, lat.Latency.P99, fmt.Sprintf("p99 %.2f ms, but at %.0f jobs/s offered: not the target's rate", lat.Latency.P99, run.Latency.Rate))
	default:
		add(goal, lat.Latency.P99 <= 1, lat.Latency.P99, fmt.Sprintf("p99 %.2f ms", lat.Latency.P99))
	}
	goal = "valkey script time per drained job (claim_batch + complete_batch) ≤ 8 µs"
	if cl, co := scriptCost(run, "claim_batch"), scriptCost(run, "complete_batch"); cl > 0 && co > 0 {
		add(goal, cl+co <= 8, cl+co, fmt.Sprintf("%.2f µs (claim_batch %.2f + complete_batch %.2f)", cl+co, cl, co))
	} else {
		add(goal, false, 0, missing)
	}
	return out
}

func writeTargets(w io.Writer, rep *Report, run *Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadTargets, run.Axis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "goal\tmeasured\tverdict\n")
	for _, t := range run.Targets {
		v := "MET"
		if !t.Met {
			v = "NOT MET"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Goal, t.Measured, v)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// writeBounds says, for the scenarios that decide the targets, what held each system back:
// the machine's cores, Valkey's one script thread, or waiting (round trips, commits, cooldowns).
func writeBounds(w io.Writer, rep *Report, run *Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadBounds, run.Axis)
	cores := float64(rep.Machine.Cores)
	for _, name := range []string{ScDrain, ScEnqueueConc, ScEnqueueBatch} {
		s := run.scenario(name)
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

func scriptNote(st *ServerTime) string {
	if st == nil {
		return ""
	}
	return fmt.Sprintf(", %.0f%% of the wall time inside scripts", 100*st.ScriptShare)
}

func opt(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("%.2f", *v)
}

func verdict(r *Result, cores float64) string {
	c := r.CPU
	if c.Valkey != nil && *c.Valkey >= 0.85 {
		if r.Server != nil && r.Server.ScriptShare >= 0.6 {
			return fmt.Sprintf("bound by Valkey's one main thread (%.2f cores), mostly inside the scripts: faster scripts move this figure", *c.Valkey)
		}
		return fmt.Sprintf("bound by Valkey's one main thread (%.2f cores): scripts plus network I/O and parsing", *c.Valkey)
	}
	if c.Valkey != nil && *c.Valkey >= 0.6 {
		return fmt.Sprintf("mostly Valkey's one main thread: busy %.2f cores%s; it is the next bound once it gets a core to itself", *c.Valkey, scriptNote(r.Server))
	}
	if c.Machine == nil || *c.Machine < 0.8*cores {
		return "not CPU-bound: the time goes to waiting — round trips, commit fsyncs, fetch cooldowns or polls"
	}
	type part struct {
		name string
		v    float64
	}
	parts := []part{{"the bench process (load generator and every client side)", c.Bench}}
	own := c.Bench
	if c.Valkey != nil {
		parts = append(parts, part{"valkey", *c.Valkey})
		own += *c.Valkey
	}
	if c.Postgres != nil {
		parts = append(parts, part{"postgres", *c.Postgres})
		own += *c.Postgres
	}
	big := parts[0]
	for _, p := range parts[1:] {
		if p.v > big.v {
			big = p
		}
	}
	other := max(*c.Machine-own, 0)
	if own < 0.75*cores {
		return fmt.Sprintf("the cores were saturated, but %.2f of them by processes outside this bench: this figure is held down by the shared machine (of its own %.2f cores, the largest share is %s, %.2f)", other, own, big.name, big.v)
	}
	return fmt.Sprintf("CPU-bound: the cores are saturated, the largest share by %s (%.2f cores); outside processes %.2f", big.name, big.v, other)
}

func writeRatios(w io.Writer, rs []Ratio, note string) {
	if len(rs) == 0 {
		fmt.Fprintf(w, "ratios: n/a (a system is missing or failed)\n")
		return
	}
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s = %.2f", r.Name, r.Value))
	}
	fmt.Fprintf(w, "ratios: %s (%s)\n", strings.Join(parts, ", "), note)
}

// WriteLatencySVG draws latency against percentile, one line per system: x is the percentile
// on the usual 1/(1−p) log scale, y is milliseconds on a log scale. The title wraps and the
// legend sits under the plot, sized from its labels.
func WriteLatencySVG(w io.Writer, ls *LatencyScenario, axisName string) {
	io.WriteString(w, latencySVG(ls, axisName))
}

func latencySVG(ls *LatencyScenario, axisName string) string {
	const width = 760.0
	s := &svg{w: width}
	top := s.title(10, 0, width-20, fmt.Sprintf("%s (%s)", ls.Title, axisName))
	left, right := 70.0, 40.0 // room for the last tick's label
	pw, ph := width-left-right, 300.0
	maxX := math.Log10(1 / (1 - 0.9999)) // up to 99.99
	xOf := func(q float64) float64 {
		qq := math.Min(q/100, 0.9999)
		return left + pw*math.Log10(1/(1-qq))/maxX
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ls.Results {
		for _, p := range r.Latency.Percentiles {
			if p.Ms > 0 {
				lo, hi = math.Min(lo, p.Ms), math.Max(hi, p.Ms)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.1, 10
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	yOf := func(ms float64) float64 {
		v := math.Log10(math.Max(ms, math.Pow(10, ylo)))
		return top + ph*(1-(v-ylo)/(yhi-ylo))
	}
	fmt.Fprintf(&s.b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, top, pw, ph)
	for _, q := range []float64{0, 90, 99, 99.9, 99.99} {
		x := xOf(q)
		s.line(x, top, x, top+ph, "#eee", 1, false)
		s.text(x, top+ph+18, fontSize, "middle", "#444", fmt.Sprintf("%g%%", q))
	}
	for e := ylo; e <= yhi; e++ {
		y := yOf(math.Pow(10, e))
		s.line(left, y, left+pw, y, "#eee", 1, false)
		s.text(left-6, y+4, fontSize, "end", "#444", fmt.Sprintf("%g ms", math.Pow(10, e)))
	}
	s.text(left+pw/2, top+ph+38, fontSize, "middle", "#444", "percentile")
	var items [][2]string
	for _, r := range ls.Results {
		if r.Latency.Count == 0 {
			continue
		}
		col := systemColor(r.System)
		var pts []string
		for _, p := range r.Latency.Percentiles {
			if p.Q > 99.99 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.Q), yOf(p.Ms)))
		}
		fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		items = append(items, [2]string{fmt.Sprintf("%s: p50 %.2f ms, p99 %.2f ms, max %.1f ms", r.System, r.Latency.P50, r.Latency.P99, r.Latency.Max), col})
	}
	s.h = s.legend(left, top+ph+48, items) + 4
	return s.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
