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
	fmt.Fprintf(w, "  Bus (Valkey): %s.\n", bus)
	fmt.Fprintf(w, "    An enqueue is not atomic with any store: a business row in PostgreSQL and its bus job\n")
	fmt.Fprintf(w, "    are two systems; a crash between them leaves one without the other.\n\n")
	fmt.Fprintf(w, "Engines:\n")
	for _, e := range run.Engines {
		var kv []string
		for _, s := range e.Settings {
			kv = append(kv, s[0]+"="+s[1])
		}
		fmt.Fprintf(w, "  %-8s %s (%s): %s\n", e.Engine, e.Version, e.Mode, strings.Join(kv, " "))
	}
	fmt.Fprintf(w, "Systems:\n  %s: %s\n  %s: %s; MaxWorkers=%d, FetchCooldown=%v (set to Oban's dispatch cooldown), other settings default\n  %s: %s; consumer parks on the wake key\n",
		SysOban, rep.Versions.Oban, SysRiver, rep.Versions.River, rep.Params.Workers, RiverFetchCooldown, SysBus, rep.Versions.Bus)
	fmt.Fprintf(w, "Machine: %d cores (GOMAXPROCS %d), %s/%s, %s. The engines and the load generator share these cores.\n",
		rep.Machine.Cores, rep.Machine.GOMAXPROCS, rep.Machine.OS, rep.Machine.Arch, rep.Machine.Go)
	p := rep.Params
	fmt.Fprintf(w, "Durations: %v per timed repeat, %d repeats (median, min–max shown); drain backlog %d; latency %v at %.0f jobs/s offered.\n",
		p.Duration, p.Repeats, p.Backlog, p.LatencyDuration, p.Rate)
	fmt.Fprintf(w, "Latency method: open loop; each job carries its intended send instant and latency is counted from it,\n")
	fmt.Fprintf(w, "so a stalled sender cannot hide queueing delay (coordinated omission); HdrHistogram, 3 significant digits.\n\n")
}

func writeFigures(w io.Writer, rep *Report, run *Run) {
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadCeilings, run.Axis)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ceiling\tengine\tops/s (median)\tspread\twhat\n")
	for _, c := range run.Ceilings {
		if c.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\terror\t\t%s: %s\n", c.Name, c.Engine, c.What, c.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f–%.0f\t%s\n", c.Name, c.Engine, c.Rate.Median, c.Rate.Min, c.Rate.Max, c.What)
	}
	tw.Flush()
	fmt.Fprintf(w, "\"of engine ceiling\" below = jobs/s ÷ the named ceiling's ops/s; above 1× means more than one job per commit (batches).\n\n")
	for _, s := range run.Scenarios {
		fmt.Fprintf(w, "%s%s — axis %s ==\n%s\n", HeadScenario, s.Name, run.Axis, s.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "system\tengine\tjobs/s (median)\tspread (min–max)\trepeats\tof engine ceiling\n")
		for _, r := range s.Results {
			if r.Err != "" {
				fmt.Fprintf(tw, "%s\t%s\terror\t\t\t%s\n", r.System, r.Engine, r.Err)
				continue
			}
			frac := "n/a"
			if r.Fraction > 0 {
				frac = fmt.Sprintf("%.2f× %s", r.Fraction, r.Ceiling)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f–%.0f\t%d\t%s\n", r.System, r.Engine, r.JobsPerS.Median, r.JobsPerS.Min, r.JobsPerS.Max, len(r.JobsPerS.Repeats), frac)
		}
		tw.Flush()
		writeRatios(w, s.Ratios, "jobs/s medians; above 1: the bus moved more")
		fmt.Fprintln(w)
	}
	if ls := run.Latency; ls != nil {
		fmt.Fprintf(w, "%s%s — axis %s ==\n%s; plot: %s\n", HeadScenario, ls.Name, run.Axis, ls.Title, ls.PlotFile)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "system\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\tjobs\tsent in\n")
		for _, r := range ls.Results {
			if r.Err != "" && r.Latency.Count == 0 {
				fmt.Fprintf(tw, "%s\terror\t\t\t\t\t%s\n", r.System, r.Err)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d\t%.1fs\n", r.System, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Received, r.Offered, r.SendSeconds)
			if r.Err != "" {
				fmt.Fprintf(tw, "\t(error: %s)\n", r.Err)
			}
		}
		tw.Flush()
		writeRatios(w, ls.Ratios, "below 1: the bus was faster")
		fmt.Fprintln(w)
	}
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
// on the usual 1/(1−p) log scale, y is milliseconds on a log scale.
func WriteLatencySVG(w io.Writer, ls *LatencyScenario, axisName string) {
	const (
		W, H                   = 760, 440
		left, right, top, bott = 70, 170, 40, 60
	)
	pw, ph := float64(W-left-right), float64(H-top-bott)
	colors := map[string]string{SysOban: "#1f77b4", SysRiver: "#2ca02c", SysBus: "#d62728"}
	maxX := math.Log10(1 / (1 - 0.9999)) // up to 99.99
	xOf := func(q float64) float64 {
		qq := math.Min(q/100, 0.9999)
		return float64(left) + pw*math.Log10(1/(1-qq))/maxX
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
		return float64(top) + ph*(1-(v-ylo)/(yhi-ylo))
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="14">%s (%s)</text>`+"\n", left, xmlEscape(ls.Title), xmlEscape(axisName))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, top, pw, ph)
	for _, q := range []float64{0, 90, 99, 99.9, 99.99} {
		x := xOf(q)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.0f" stroke="#eee"/>`+"\n", x, top, x, float64(top)+ph)
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle">%g%%</text>`+"\n", x, float64(top)+ph+18, q)
	}
	for e := ylo; e <= yhi; e++ {
		y := yOf(math.Pow(10, e))
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n", left, y, float64(left)+pw, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%g ms</text>`+"\n", left-6, y+4, math.Pow(10, e))
	}
	fmt.Fprintf(w, `<text x="%.0f" y="%d" text-anchor="middle">percentile</text>`+"\n", float64(left)+pw/2, H-15)
	i := 0
	for _, r := range ls.Results {
		if r.Latency.Count == 0 {
			continue
		}
		col := colors[r.System]
		if col == "" {
			col = "#555"
		}
		var pts []string
		for _, p := range r.Latency.Percentiles {
			if p.Q > 99.99 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.Q), yOf(p.Ms)))
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		ly := top + 20 + 22*i
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", W-right+15, ly-4, W-right+40, ly-4, col)
		fmt.Fprintf(w, `<text x="%d" y="%d">%s (max %.1f ms)</text>`+"\n", W-right+46, ly, xmlEscape(r.System), r.Latency.Max)
		i++
	}
	fmt.Fprintf(w, "</svg>\n")
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
