package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/scale"
)

func writeScale(w io.Writer, rep *bench.Report) {
	ax := rep.Scale
	if ax == nil {
		return
	}
	fmt.Fprintf(w, "%s — the bus's drain across Valkey Cluster primaries ==\n%s; median of %d rounds, interleaved.\n", HeadScale, ax.Title, ax.Repeats)
	fmt.Fprintf(w, "Machine: %s. %s\n", coresText(rep.Machine), scaleShapeNote)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "deployment\tprimaries\tqueues\tworkers\tjobs/s (median)\tspread (min–max)\trounds\tper primary\tredirects\tcpu\n")
	for _, r := range ax.Results {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\terror\t\t\t\t\t%s\n", r.Label(), r.Primaries, r.Queues, r.Workers, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f–%.0f\t%d\t%.0f\t%d\t%s\n", r.Label(), r.Primaries, r.Queues, r.Workers,
			r.JobsPerS.Median, r.JobsPerS.Min, r.JobsPerS.Max, len(r.JobsPerS.Repeats), r.PerPrimary, r.Redirects, cpuText(r.CPU))
	}
	tw.Flush()
	fmt.Fprintf(w, "cpu: cores busy as bench process / valkey (every primary together) / postgres (none here) / whole machine, out = other work's share.\n")
	for _, r := range ax.Results {
		if r.Err != "" || len(r.Nodes) == 0 {
			continue
		}
		var parts []string
		for _, n := range r.Nodes {
			parts = append(parts, fmt.Sprintf("%s %d queues, %.2f µs of script per job, scripts %.0f%% of the window", n.Addr, n.Queues, n.UsecPerJob, 100*n.ScriptShare))
		}
		fmt.Fprintf(w, "%s per primary (INFO commandstats): %s\n", r.Label(), strings.Join(parts, "; "))
	}
	for _, r := range ax.Results {
		if v := scaleVerdict(r, rep.Machine.Cores); v != "" {
			fmt.Fprintf(w, "%s → %s\n", r.Label(), v)
		}
	}
	for _, r := range ax.Results {
		if r.Redelivered > 0 {
			fmt.Fprintf(w, "%s: %d redelivered handler starts (a job started twice in one round)\n", r.Label(), r.Redelivered)
		}
	}
	writeRatios(w, ax.Ratios, "cluster-1/standalone: the router's own cost; cluster-n/cluster-1: the speed-up of n primaries")
	for _, g := range ax.Gaps {
		fmt.Fprintf(w, "gap: %s\n", g)
	}
	fmt.Fprintln(w)
}

const scaleShapeNote = "Every primary, the standalone server and the load generator share these cores: on few cores the figure shows the shape (queues on different primaries drain independently), not the ceiling."

func writeScaleHTML(b *strings.Builder, rep *bench.Report) {
	ax := rep.Scale
	if ax == nil {
		return
	}
	b.WriteString("<h2 data-fit>Scale: the bus's drain across Valkey Cluster primaries</h2>\n")
	fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s; median of %d rounds. Machine: %s. %s</p>\n", esc(ax.Title), ax.Repeats, esc(coresText(rep.Machine)), esc(scaleShapeNote))
	var rows []barRow
	for _, r := range ax.Results {
		if r.Err != "" || r.JobsPerS.Median <= 0 {
			continue
		}
		col := systemColor(busName)
		if r.Deployment == scale.Standalone {
			col = "#555"
		}
		rows = append(rows, barRow{label: r.Label(), color: col, median: r.JobsPerS.Median, lo: r.JobsPerS.Min, hi: r.JobsPerS.Max})
	}
	if len(rows) > 0 {
		b.WriteString(barChart("bus drain: primaries → jobs/s (standalone Valkey as the baseline)", "jobs/s: median bar, min–max whiskers over the rounds", rows, nil))
	}
	b.WriteString("<table><tr><th>deployment</th><th>queues</th><th>workers</th><th>jobs/s</th><th>per primary</th><th>redirects</th><th>cpu</th></tr>\n")
	for _, r := range ax.Results {
		if r.Err != "" {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td colspan=\"4\" class=\"fail\">error: %s</td></tr>\n", esc(r.Label()), r.Queues, r.Workers, esc(r.Err))
			continue
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n", esc(r.Label()), r.Queues, r.Workers,
			human(r.JobsPerS.Median), human(r.PerPrimary), r.Redirects, esc(cpuText(r.CPU)))
	}
	b.WriteString("</table>\n")
	for _, r := range ax.Results {
		if r.Err != "" || len(r.Nodes) == 0 {
			continue
		}
		var parts []string
		for _, n := range r.Nodes {
			parts = append(parts, fmt.Sprintf("%d queues, %.2f µs of script per job, scripts %.0f%% of the window", n.Queues, n.UsecPerJob, 100*n.ScriptShare))
		}
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s, each primary (Valkey INFO commandstats): %s</p>\n", esc(r.Label()), esc(strings.Join(parts, "; ")))
	}
	if len(ax.Ratios) > 0 {
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>ratios (cluster-1/standalone: the router's own cost; cluster-n/cluster-1: the speed-up of n primaries): %s</p>\n", esc(ratiosText(ax.Ratios)))
	}
	for _, g := range ax.Gaps {
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>gap: %s</p>\n", esc(g))
	}
}
func scaleVerdict(r *scale.Result, cores int) string {
	if r.Err != "" || r.CPU == nil {
		return ""
	}
	busiest := 0.0
	for _, n := range r.Nodes {
		busiest = max(busiest, n.ScriptShare)
	}
	if m := r.CPU.Machine; m != nil && *m >= 0.8*float64(cores) {
		return fmt.Sprintf("the machine's cores were saturated (%.2f of %d busy; other work held %s of the cores): bounded by the cores, not by the primaries", *m, cores, pct(r.CPU.Outside))
	}
	if busiest >= 0.6 {
		return fmt.Sprintf("bound by a primary's one thread (scripts filled %.0f%% of the window on the busiest)", 100*busiest)
	}
	return "neither the cores nor a primary's thread was full: the time went to waiting (round trips, polls)"
}
