package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
)

// writeTail is the bus's latency breakdown: which part of a job's way holds the tail.
func writeTail(w io.Writer, run *bench.Run) {
	t := run.Tail
	if t == nil {
		return
	}
	fmt.Fprintf(w, "%s — axis %s ==\n", HeadTail, run.Axis)
	fmt.Fprintf(w, "The bus's own latency rounds, four stamps per job (%d jobs): its intended instant t0, the hand-off to Enqueue t1,\n", t.Samples)
	fmt.Fprintf(w, "Enqueue's return t2, the handler's start t3.\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "part\tp50 ms\tp99 ms\tslowest 1%% (median) ms\n")
	fmt.Fprintf(tw, "sender late (t1−t0): the open-loop generator, not the bus\t%.3f\t%.3f\t%.3f\n", t.SenderLate.P50, t.SenderLate.P99, t.Slowest.SenderLate)
	fmt.Fprintf(tw, "Enqueue call (t2−t1): the enqueue script's round trip\t%.3f\t%.3f\t%.3f\n", t.Call.P50, t.Call.P99, t.Slowest.Call)
	fmt.Fprintf(tw, "the bus's path (t3−t1): enqueue, wake, claim, dispatch to a worker\t%.3f\t%.3f\t%.3f\n", t.Path.P50, t.Path.P99, t.Slowest.Path)
	tw.Flush()
	fmt.Fprintf(w, "slowest 1%%: %d jobs at or above the p99, median latency %.3f ms.\n", t.Slowest.N, t.Slowest.Latency)
	fmt.Fprintf(w, "bench process during the rounds (runtime/metrics): %d GC cycles, pauses %.2f ms in all, the longest ≤ %.3f ms;\n", t.GCCycles, t.GCPauseTotal, t.GCPauseMaxMs)
	fmt.Fprintf(w, "  runnable goroutines waited for a core: p99 ≤ %.3f ms, the longest ≤ %.3f ms.\n", t.SchedP99Ms, t.SchedMaxMs)
	if len(t.Server) > 0 {
		fmt.Fprintf(w, "valkey's own command time (INFO latencystats over the last round, µs): %s\n", serverText(t.Server))
	}
	if len(t.Stalls) > 0 {
		fmt.Fprintf(w, "valkey's latency monitor over the latency rounds (events of 1 ms or more of wall time; a fast-command that\n")
		fmt.Fprintf(w, "  takes a millisecond is the server's thread kept off its CPU): %s\n", stallsText(t.Stalls))
	}
	for _, v := range t.Variants {
		if v.Err != "" {
			fmt.Fprintf(w, "variant %s: error: %s\n", v.Name, v.Err)
			continue
		}
		fmt.Fprintf(w, "variant %s: p50 %.2f ms, p99 %.2f ms (sender late p99 %.2f ms)\n", v.Name, v.P50, v.P99, v.SenderLate)
	}
	fmt.Fprintf(w, "→ %s\n\n", tailVerdict(run))
}

func stallsText(kv [][2]string) string {
	var parts []string
	for _, s := range kv {
		parts = append(parts, s[0]+" "+s[1])
	}
	return strings.Join(parts, "; ")
}

func serverText(kv [][2]string) string {
	var parts []string
	for _, s := range kv {
		parts = append(parts, s[0]+" "+strings.ReplaceAll(s[1], ",", " "))
	}
	return strings.Join(parts, "; ")
}

// tailVerdict names what the figures show holds the bus's p99.
func tailVerdict(run *bench.Run) string {
	t := run.Tail
	lat := run.Latency.LatencyOf(busName)
	if lat == nil {
		return "no bus latency figure"
	}
	var parts []string
	s := t.Slowest
	if s.Latency > 0 {
		parts = append(parts, fmt.Sprintf("of the slowest 1%% (median %.2f ms), the generator's lateness is %.0f%% and the bus's path %.0f%%",
			s.Latency, 100*s.SenderLate/s.Latency, 100*s.Path/s.Latency))
	}
	for _, v := range t.Variants {
		if v.Err == "" && v.P99 > 0 && lat.P99Median > 0 {
			parts = append(parts, fmt.Sprintf("%s moves the p99 from %.2f to %.2f ms (×%.2f)", v.Name, lat.P99Median, v.P99, v.P99/lat.P99Median))
		}
	}
	if t.GCPauseMaxMs > 0 {
		parts = append(parts, fmt.Sprintf("GC pauses are at most %.3f ms", t.GCPauseMaxMs))
	}
	if t.SchedP99Ms > 0 {
		parts = append(parts, fmt.Sprintf("a runnable goroutine waits ≤ %.3f ms for a core at p99", t.SchedP99Ms))
	}
	return strings.Join(parts, "; ")
}

func writeTailHTML(b *strings.Builder, run *bench.Run) {
	if run.Tail == nil {
		return
	}
	var t strings.Builder
	writeTail(&t, run)
	fmt.Fprintf(b, "<h3 data-fit>Where the bus's latency tail comes from</h3>\n<pre data-fit>%s</pre>\n", esc(t.String()))
}
