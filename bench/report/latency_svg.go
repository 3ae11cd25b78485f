package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/echomq/kit/bench"
)

// floorMs is the histogram's lowest value (1 µs): a point there is a clamp, not a measurement.
const floorMs = 0.001

// WriteLatencySVG draws latency against percentile, one line per system, with its own legend
// (the file stands alone): x is the percentile on the usual 1/(1−p) log scale, y is
// milliseconds on a log scale.
func WriteLatencySVG(w io.Writer, ls *bench.LatencyScenario, axisName string) {
	io.WriteString(w, latencySVG(ls, axisName, true))
}

// latencySVG draws the plot; legend false leaves the legend to the page section. Each curve
// starts at its lowest measured percentile: a point at the histogram's floor is not drawn.
func latencySVG(ls *bench.LatencyScenario, axisName string, legend bool) string {
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
	ylo, yhi := latencyRange(ls)
	yOf := func(ms float64) float64 {
		v := math.Log10(math.Max(ms, math.Pow(10, ylo)))
		return top + ph*(1-(v-ylo)/(yhi-ylo))
	}
	fmt.Fprintf(&s.b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, top, pw, ph)
	for _, q := range []float64{0, 90, 99, 99.9, 99.99} {
		x := xOf(q)
		s.line(x, top, x, top+ph, "#eee", 1, "")
		s.text(x, top+ph+18, fontSize, "middle", "#444", fmt.Sprintf("%g%%", q))
	}
	for e := ylo; e <= yhi; e++ {
		y := yOf(math.Pow(10, e))
		s.line(left, y, left+pw, y, "#eee", 1, "")
		s.text(left-6, y+4, fontSize, "end", "#444", fmt.Sprintf("%g ms", math.Pow(10, e)))
	}
	s.text(left+pw/2, top+ph+38, fontSize, "middle", "#444", "percentile")
	var items [][2]string
	for _, r := range ls.Results {
		var pts []string
		for _, p := range r.Latency.Percentiles {
			if p.Q <= 99.99 && p.Ms > floorMs {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.Q), yOf(p.Ms)))
			}
		}
		if len(pts) < 2 {
			continue
		}
		col := systemColor(r.System)
		fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		items = append(items, [2]string{fmt.Sprintf("%s: p50 %.2f ms, p99 %.2f ms, max %.1f ms", r.System, r.Latency.P50, r.Latency.P99, r.Latency.Max), col})
	}
	s.h = top + ph + 48
	if legend {
		s.h = s.legend(left, top+ph+48, items) + 4
	}
	return s.String()
}

// latencyRange is the plot's y range in decades, from the lowest measured point to the highest.
func latencyRange(ls *bench.LatencyScenario) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ls.Results {
		for _, p := range r.Latency.Percentiles {
			if p.Ms > floorMs && p.Q <= 99.99 {
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
	return ylo, yhi
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
