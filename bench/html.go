package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteHTML writes bench.html: one self-contained page (inline SVG and CSS, no script, nothing
// fetched) drawn from the report alone, so an old bench.json can be redrawn. The asymmetry
// comes first, as in bench.out; then per axis the gate, each scenario's bars, the latency
// curves, the CPU per party and the targets. bench.out stays the text of record for CI.
func WriteHTML(w io.Writer, rep *Report) {
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>EchoMQ bench</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:"DejaVu Sans",Verdana,sans-serif;margin:0 auto;max-width:820px;padding:16px 20px;color:#222;line-height:1.4}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px;margin-top:24px}
pre,.wrap{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
pre{background:#f7f7f7;padding:10px;font-size:12px;border:1px solid #e4e4e4}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
td,th{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.pass{color:#176f2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}.busy{background:#fff3cd;padding:6px 10px}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1 data-fit>EchoMQ bench — mode %s</h1>\n", esc(rep.Params.Mode))
	out := rep.Outside()
	fmt.Fprintf(&b, "<p class=\"wrap\" data-fit>%s, %.0f s; %s, %s/%s, %s. Load while measuring: median outside share %.0f%%.</p>\n",
		esc(rep.Started.Format("2006-01-02 15:04:05Z")), rep.Seconds, esc(coresText(rep.Machine)), esc(rep.Machine.OS), esc(rep.Machine.Arch), esc(rep.Machine.Go), 100*out)
	if out > 0.15 {
		b.WriteString("<p class=\"busy wrap\" data-fit>The machine was busy with other work while this was measured: absolute figures are low and noisy; ratios within the run still compare.</p>\n")
	}
	if len(rep.Runs) > 0 {
		b.WriteString("<h2 data-fit>What each side promises (read this before any figure)</h2>\n")
	}
	for _, run := range rep.Runs {
		var t strings.Builder
		writeAsymmetry(&t, rep, run)
		fmt.Fprintf(&b, "<pre data-fit>%s</pre>\n", esc(t.String()))
	}
	for _, run := range rep.Runs {
		writeRunHTML(&b, rep, run)
	}
	writeScaleHTML(&b, rep)
	b.WriteString("</body></html>\n")
	io.WriteString(w, b.String())
}

func esc(s string) string { return html.EscapeString(s) }

func writeRunHTML(b *strings.Builder, rep *Report, run *Run) {
	fmt.Fprintf(b, "<h2 data-fit>Axis %s</h2>\n", esc(run.Axis))
	if len(run.Gate) > 0 {
		verdict, class := "GATE PASS", "pass"
		if !Passed(run.Gate) {
			verdict, class = "GATE FAIL", "fail"
		}
		fmt.Fprintf(b, "<h3 data-fit>Gate: <span class=\"%s\">%s</span></h3>\n<table><tr><th>scenario</th><th>ratio</th><th>threshold</th><th>measured</th><th>verdict</th></tr>\n", class, verdict)
		for _, g := range run.Gate {
			th := g.Threshold()
			got, v, c := "not measured", "FAIL", "fail"
			if g.Found {
				got = fmt.Sprintf("%.2f", g.Value)
			}
			if g.Pass {
				v, c = "PASS", "pass"
			}
			if g.Reruns > 0 {
				v += " (after a re-run)"
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n", esc(g.Scenario), esc(g.Ratio), th, got, c, v)
		}
		b.WriteString("</table>\n")
	}
	refs := func(sc string, engines ...Engine) []refLine {
		var out []refLine
		for _, c := range run.Ceilings {
			if c.Err != "" {
				continue
			}
			for _, e := range engines {
				if c.Engine == e {
					out = append(out, refLine{fmt.Sprintf("%s ceiling (%s)", c.Name, c.What), c.Rate.Median})
				}
			}
		}
		return out
	}
	for _, s := range run.Scenarios {
		var rows []barRow
		for _, r := range s.Results {
			if r.Err != "" || r.JobsPerS.Median <= 0 {
				continue
			}
			rows = append(rows, barRow{label: r.System, color: systemColor(r.System), median: r.JobsPerS.Median, lo: r.JobsPerS.Min, hi: r.JobsPerS.Max})
		}
		fmt.Fprintf(b, "<h3 data-fit>%s</h3>\n", esc(s.Name))
		if len(rows) == 0 {
			b.WriteString("<p data-fit>no system measured</p>\n")
			continue
		}
		b.WriteString(barChart(s.Title, "jobs/s: median bar, min–max whiskers over the repeats", rows, refs(s.Name, Postgres, Valkey)))
		var rs []string
		for _, r := range s.Ratios {
			rs = append(rs, fmt.Sprintf("%s = %.2f", r.Name, r.Value))
		}
		for _, r := range s.Results {
			if r.Err != "" {
				rs = append(rs, fmt.Sprintf("%s: error: %s", r.System, r.Err))
			}
		}
		if len(rs) > 0 {
			fmt.Fprintf(b, "<p class=\"wrap\" data-fit>ratios: %s</p>\n", esc(strings.Join(rs, "; ")))
		}
		var cpu []stackRow
		for _, r := range s.Results {
			if c := r.CPU; c != nil && r.Err == "" {
				cpu = append(cpu, stackRow{label: r.System, parts: []float64{c.Bench, deref(c.Valkey), deref(c.Postgres), deref(c.Outside) * float64(rep.Machine.Cores)}})
			}
		}
		if len(cpu) > 0 && (s.Name == ScDrain || s.Name == ScEnqueueConc) {
			b.WriteString(stackChart("where the time goes in "+s.Name+": cores busy per party", cpu, math.Max(float64(rep.Machine.Cores), 1)))
		}
	}
	if ls := run.Latency; ls != nil {
		fmt.Fprintf(b, "<h3 data-fit>%s</h3>\n", esc(ls.Name))
		b.WriteString(latencySVG(ls, run.Axis))
		var rs []string
		for _, r := range ls.Ratios {
			rs = append(rs, fmt.Sprintf("%s = %.2f", r.Name, r.Value))
		}
		if len(rs) > 0 {
			fmt.Fprintf(b, "<p class=\"wrap\" data-fit>ratios (below 1: the bus was faster): %s</p>\n", esc(strings.Join(rs, "; ")))
		}
	}
	if len(run.Targets) > 0 {
		b.WriteString("<h3 data-fit>Targets</h3>\n<table><tr><th>goal</th><th>measured</th><th>verdict</th></tr>\n")
		for _, t := range run.Targets {
			v, c := "MET", "pass"
			if !t.Met {
				v, c = "NOT MET", "fail"
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n", esc(t.Goal), esc(t.Measured), c, v)
		}
		b.WriteString("</table>\n")
	}
	if len(run.Gaps) > 0 {
		b.WriteString("<h3 data-fit>Gaps</h3>\n")
		for _, g := range run.Gaps {
			fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s</p>\n", esc(g))
		}
	}
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
