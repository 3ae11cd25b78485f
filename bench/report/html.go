package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/queue"
)

const pageHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>EchoMQ bench</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:"DejaVu Sans",Verdana,sans-serif;margin:0 auto;max-width:820px;padding:16px 20px;color:#222;line-height:1.4}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px;margin-top:24px}
pre,.wrap{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
pre{background:#f7f7f7;padding:10px;font-size:12px;border:1px solid #e4e4e4}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}.notrun{color:#8a5a00;font-weight:bold}.busy{background:#fff3cd;padding:6px 10px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px;margin:8px 0}.legend span{white-space:nowrap}
.sw{display:inline-block;width:18px;height:9px;margin-right:5px;vertical-align:middle}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
</style></head><body>
`

// WriteHTML writes bench.html: one self-contained page (inline SVG and CSS, no script, nothing
// fetched) drawn from the report alone, so an old bench.json can be redrawn. The first screen
// holds the asymmetry as a short table (what each system's returned enqueue means) and the
// gate's verdict; then per axis one legend, each scenario's bars, the latency curves, where the
// time goes and the targets; the conditions in full and the scale axis last. bench.out stays the
// text of record for CI.
func WriteHTML(w io.Writer, rep *bench.Report) {
	var b strings.Builder
	b.WriteString(pageHead)
	fmt.Fprintf(&b, "<h1 data-fit>EchoMQ bench — mode %s</h1>\n", esc(rep.Params.Mode))
	out := rep.Outside()
	fmt.Fprintf(&b, "<p class=\"wrap\" data-fit>%s, %.0f s; %s, %s/%s, %s. Load while measuring: median outside share %.0f%%.</p>\n",
		esc(rep.Started.Format("2006-01-02 15:04:05Z")), rep.Seconds, esc(coresText(rep.Machine)), esc(rep.Machine.OS), esc(rep.Machine.Arch), esc(rep.Machine.Go), 100*out)
	if out > 0.15 {
		b.WriteString("<p class=\"busy wrap\" data-fit>The machine was busy with other work while this was measured: absolute figures are low and noisy; ratios within the run still compare.</p>\n")
	}
	if len(rep.Runs) > 0 {
		writeAsymmetryHTML(&b, rep, rep.Runs[0])
	}
	for _, run := range rep.Runs {
		writeRunHTML(&b, rep, run)
	}
	writeScaleHTML(&b, rep)
	if len(rep.Runs) > 0 {
		b.WriteString("<h2 data-fit>Conditions, versions and settings</h2>\n")
		for _, run := range rep.Runs {
			var t strings.Builder
			writeConditions(&t, rep, run)
			fmt.Fprintf(&b, "<h3 data-fit>Axis %s</h3>\n<pre data-fit>%s</pre>\n", esc(run.Axis), esc(t.String()))
		}
	}
	b.WriteString("</body></html>\n")
	io.WriteString(w, b.String())
}

func esc(s string) string { return html.EscapeString(s) }

// writeAsymmetryHTML is the first figure: what a returned enqueue means for each system, on
// the first axis's engines, then every axis's gate verdict.
func writeAsymmetryHTML(b *strings.Builder, rep *bench.Report, run *bench.Run) {
	b.WriteString("<h2 data-fit>What each system promises (read this before any figure)</h2>\n")
	fmt.Fprintf(b, "<table data-first-screen=\"asymmetry\"><tr><th style=\"width:17%%\">system</th><th style=\"width:10%%\">engine</th><th>a returned enqueue means (axis %s)</th><th>with a business row in PostgreSQL</th></tr>\n", esc(run.Axis))
	for _, g := range guarantees(rep, run) {
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", esc(g.system), esc(g.engine), esc(g.durable), esc(g.withRow))
	}
	b.WriteString("</table>\n<p class=\"wrap\" data-fit>Delivery is at least once on every side. Valkey's enqueues are not atomic with PostgreSQL: the bus gets atomicity through an outbox (enqueue-transactional) and an exactly-once effect through reference/absorb (drain-exactly-once).</p>\n")
	for _, r := range rep.Runs {
		if len(r.Gate) > 0 || r.Baseline != nil {
			class := "pass"
			if !r.GatePass() {
				class = "fail"
			}
			fmt.Fprintf(b, "<p data-fit data-first-screen=\"gate\">Gate on axis %s: <span class=\"%s\">%s</span> (the table is in the axis's section)</p>\n", esc(r.Axis), class, esc(gateLine(r)))
		}
	}
}

func writeRunHTML(b *strings.Builder, rep *bench.Report, run *bench.Run) {
	fmt.Fprintf(b, "<h2 data-fit>Axis %s</h2>\n", esc(run.Axis))
	writeLegend(b, rep, run)
	writeGateHTML(b, run)
	for _, s := range run.Scenarios {
		if s.Name != queue.DrainBacklog {
			writeScenarioHTML(b, rep, run, s)
		}
	}
	writeBacklogHTML(b, run)
	if ls := run.Latency; ls != nil {
		fmt.Fprintf(b, "<h3 data-fit>%s</h3>\n", esc(ls.Name))
		b.WriteString(latencySVG(ls, run.Axis, false))
		writeLatencyTable(b, ls)
		if len(ls.Ratios) > 0 {
			fmt.Fprintf(b, "<p class=\"wrap\" data-fit>ratios of the rounds' median p99 (below 1: the bus was faster): %s</p>\n", esc(ratiosText(ls.Ratios)))
		}
		writeTailHTML(b, run)
	}
	writeTargetsHTML(b, run)
	if len(run.Gaps) > 0 {
		b.WriteString("<h3 data-fit>Gaps</h3>\n")
		for _, g := range run.Gaps {
			fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s</p>\n", esc(g))
		}
	}
}

// writeLegend is the section's one legend: every system's colour, the CPU parties' and the
// ceilings' line styles.
func writeLegend(b *strings.Builder, rep *bench.Report, run *bench.Run) {
	b.WriteString("<div class=\"legend\" data-fit>")
	for _, s := range rep.Systems {
		fmt.Fprintf(b, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", systemColor(s.Name), esc(s.Name))
	}
	b.WriteString("</div>\n<div class=\"legend\" data-fit>")
	for _, p := range stackParts {
		fmt.Fprintf(b, "<span><i class=\"sw\" style=\"background:%s\"></i>cpu: %s</span>", p[1], esc(p[0]))
	}
	for _, c := range run.Ceilings {
		col, dash := refStyle(c.Name)
		fmt.Fprintf(b, "<span><svg width=\"26\" height=\"10\" style=\"display:inline;margin:0 4px 0 0\"><path d=\"M0 5H26\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\"/></svg>ceiling %s</span>", col, dash, esc(c.Name))
	}
	b.WriteString("</div>\n")
}

func writeGateHTML(b *strings.Builder, run *bench.Run) {
	if len(run.Gate) == 0 && run.Baseline == nil {
		return
	}
	class := "pass"
	switch {
	case !run.GatePass():
		class = "fail"
	case bench.NotJudged(run.Gate) > 0:
		class = "notrun"
	}
	fmt.Fprintf(b, "<h3 data-fit>Gate: <span class=\"%s\">%s</span></h3>\n<table><tr><th>scenario</th><th>ratio</th><th>threshold</th><th>measured</th><th>verdict</th></tr>\n", class, esc(gateLine(run)))
	for _, g := range run.Gate {
		c := "pass"
		switch {
		case g.NotJudged:
			c = "notrun"
		case !g.Pass:
			c = "fail"
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n", esc(g.Scenario), esc(g.Ratio), esc(g.Threshold()), esc(gateValue(g)), c, esc(gateVerdict(g)))
	}
	b.WriteString("</table>\n")
	if run.Baseline != nil {
		var t strings.Builder
		writeBaseline(&t, run.Baseline)
		fmt.Fprintf(b, "<pre class=\"wrap\" data-fit>%s</pre>\n", esc(t.String()))
	}
}

func writeScenarioHTML(b *strings.Builder, rep *bench.Report, run *bench.Run, s *bench.Scenario) {
	fmt.Fprintf(b, "<h3 data-fit>%s</h3>\n", esc(s.Name))
	rows := barRows(s)
	if len(rows) == 0 {
		b.WriteString("<p data-fit>no system measured</p>\n")
		return
	}
	b.WriteString(barChart(s.Title, "jobs/s: median bar, min–max whiskers over the repeats", rows, ceilingRefs(run)))
	var notes []string
	if len(s.Ratios) > 0 {
		notes = append(notes, "ratios: "+ratiosText(s.Ratios))
	}
	for _, r := range s.Results {
		if r.Err != "" {
			notes = append(notes, fmt.Sprintf("%s: error: %s", r.System, r.Err))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s</p>\n", esc(strings.Join(notes, "; ")))
	}
	var cpu []stackRow
	for _, r := range s.Results {
		if c := r.CPU; c != nil && r.Err == "" {
			cpu = append(cpu, stackRow{label: r.System, parts: []float64{c.Bench, deref(c.Valkey), deref(c.Postgres), deref(c.Outside) * float64(rep.Machine.Cores)}})
		}
	}
	if len(cpu) > 0 && (s.Name == queue.Drain || s.Name == queue.EnqueueConc) {
		b.WriteString(stackChart("where the time goes in "+s.Name+": cores busy per party", cpu, math.Max(float64(rep.Machine.Cores), 1)))
	}
}

func barRows(s *bench.Scenario) []barRow {
	var rows []barRow
	for _, r := range s.Results {
		if r.Err == "" && r.JobsPerS.Median > 0 {
			rows = append(rows, barRow{label: r.System, color: systemColor(r.System), median: r.JobsPerS.Median, lo: r.JobsPerS.Min, hi: r.JobsPerS.Max})
		}
	}
	return rows
}

func ceilingRefs(run *bench.Run) []refLine {
	var out []refLine
	for _, c := range run.Ceilings {
		if c.Err == "" {
			out = append(out, refLine{name: c.Name, what: c.What, value: c.Rate.Median})
		}
	}
	return out
}

// writeBacklogHTML draws the backlog axis: one bar chart per size, then the table.
func writeBacklogHTML(b *strings.Builder, run *bench.Run) {
	ss := run.Backlogs()
	if len(ss) == 0 {
		return
	}
	b.WriteString("<h3 data-fit>drain-backlog: the drain at growing backlogs</h3>\n")
	for _, s := range ss {
		if rows := barRows(s); len(rows) > 0 {
			b.WriteString(barChart(fmt.Sprintf("backlog of %s jobs, %d workers each, one round", human(float64(s.Backlog)), s.Concurrency), "jobs/s", rows, nil))
		}
	}
	b.WriteString("<table><tr><th>system</th>")
	for _, s := range ss {
		fmt.Fprintf(b, "<th>%s jobs</th>", human(float64(s.Backlog)))
	}
	b.WriteString("</tr>\n")
	for _, sys := range backlogSystems(ss) {
		fmt.Fprintf(b, "<tr><td>%s</td>", esc(sys.System))
		for _, s := range ss {
			cell := "not measured"
			if r := s.Result(sys.System); r != nil {
				cell = human(r.JobsPerS.Median) + " jobs/s"
			} else if resultErr(s, sys.System) != "" {
				cell = "error"
			}
			fmt.Fprintf(b, "<td>%s</td>", cell)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

func writeLatencyTable(b *strings.Builder, ls *bench.LatencyScenario) {
	b.WriteString("<table><tr><th>system</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>p99 per round (median)</th><th>sender late p99 ms</th></tr>\n")
	for _, r := range ls.Results {
		if r.Latency.Count == 0 {
			fmt.Fprintf(b, "<tr><td>%s</td><td colspan=\"6\" class=\"fail\">error: %s</td></tr>\n", esc(r.System), esc(r.Err))
			continue
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%s (%s)</td><td>%.2f</td></tr>\n", esc(r.System),
			r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, esc(roundP99s(r)), esc(medianText(r)), r.SenderLate.P99)
	}
	b.WriteString("</table>\n<p class=\"wrap\" data-fit>A round marked * was saturated (the offered rate was not offered); what held each system:</p>\n<ul>\n")
	for _, r := range ls.Results {
		if r.Limit != "" {
			fmt.Fprintf(b, "<li class=\"wrap\" data-fit>%s: %s</li>\n", esc(r.System), esc(r.Limit))
		}
	}
	b.WriteString("</ul>\n")
}

func writeTargetsHTML(b *strings.Builder, run *bench.Run) {
	if len(run.Targets) == 0 {
		return
	}
	b.WriteString("<h3 data-fit>Targets</h3>\n<table><tr><th>goal</th><th>measured</th><th>verdict</th></tr>\n")
	for _, t := range run.Targets {
		c := "pass"
		if !t.Met {
			c = "fail"
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n", esc(t.Goal), esc(t.Measured), c, t.Verdict())
	}
	b.WriteString("</table>\n")
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
