package report

import (
	"fmt"
	"math"
	"strings"
)

// The plots are plain SVG sized from their own text: labels are measured (an upper bound of
// the width sans-serif glyphs take) and titles wrapped, so nothing is cut at the edge.

const (
	fontSize  = 12.0
	titleSize = 14.0
	// charWidth is an upper bound of the mean advance of a sans-serif glyph, in em: DejaVu Sans
	// (the widest common default) averages about 0.55 em on mixed text.
	charWidth = 0.62
)

// textWidth bounds the width of s at size px.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * charWidth
}

// wrap breaks s into lines no wider than width at size.
func wrap(s string, size, width float64) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		next := w
		if line != "" {
			next = line + " " + w
		}
		if line != "" && textWidth(next, size) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		line = next
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// svg accumulates one picture.
type svg struct {
	b    strings.Builder
	w, h float64
}

func (s *svg) text(x, y float64, size float64, anchor, fill, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="%s" fill="%s">%s</text>`+"\n", x, y, size, anchor, fill, xmlEscape(t))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, stroke, width, d)
}

func (s *svg) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, math.Max(w, 0), math.Max(h, 0), fill)
}

// title writes a wrapped title from y down and returns the y below it.
func (s *svg) title(x, y, width float64, t string) float64 {
	for _, l := range wrap(t, titleSize, width) {
		y += titleSize + 4
		s.text(x, y, titleSize, "start", "#222", l)
	}
	return y + 8
}

func (s *svg) String() string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans, Verdana, sans-serif" font-size="%.0f" role="img">`+"\n", s.w, s.h, s.w, s.h, fontSize) +
		fmt.Sprintf(`<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", s.w, s.h) + s.b.String() + "</svg>\n"
}

// systemColor gives each system the same colour in every picture (and the legend).
func systemColor(sys string) string {
	if c, ok := colors[sys]; ok {
		return c
	}
	return "#555"
}

var colors = map[string]string{
	"bus": "#d62728", "bus+absorb": "#ff7f0e", "bullmq": "#9467bd", "asynq": "#e377c2",
	"river": "#2ca02c", "graphile-worker": "#17becf", "graphile-worker-w": "#0b6e79", "pg-boss": "#bcbd22",
	"oban-shaped": "#1f77b4",
}

// legend draws one swatch and label per row from y and returns the y below it.
func (s *svg) legend(x, y float64, items [][2]string) float64 {
	for _, it := range items {
		y += fontSize + 8
		s.rect(x, y-fontSize+2, 22, 8, it[1])
		s.text(x+30, y, fontSize, "start", "#222", it[0])
	}
	return y + 8
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

// human prints a rate compactly: 63.7k, 425k, 950.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// barRow is one bar: a system's median with its min–max.
type barRow struct {
	label          string
	color          string
	median, lo, hi float64
}

// refLine is a vertical reference (an engine's ceiling), drawn in its own colour and dash so
// that two ceilings on one plot can be told apart.
type refLine struct {
	name, what string
	value      float64
}

// refStyle is each ceiling's stroke: colour and dash pattern.
func refStyle(name string) (color, dash string) {
	switch name {
	case "pg-commit-1":
		return "#1f4e79", "6 3"
	case "pg-commit-n":
		return "#1f4e79", "2 3"
	case "valkey-evalsha":
		return "#8b0000", "9 3 2 3"
	}
	return "#444", "4 3"
}

// barChart draws horizontal bars with min–max whiskers and the engines' ceilings as vertical
// lines, each named at its top in its own style; ceilings beyond twice the largest bar are named
// under the plot instead of squashing it.
func barChart(title, unit string, rows []barRow, refs []refLine) string {
	const width = 760.0
	labelW := 0.0
	for _, r := range rows {
		labelW = math.Max(labelW, textWidth(r.label, fontSize))
	}
	left := labelW + 20
	plotW := width - left - textWidth("000.0k", fontSize) - 30
	s := &svg{w: width}
	y := s.title(10, 0, width-20, title)
	maxV := 0.0
	for _, r := range rows {
		maxV = math.Max(maxV, math.Max(r.hi, r.median))
	}
	var shown, off []refLine
	for _, rl := range refs {
		if rl.value > 0 && rl.value <= 2*maxV {
			shown = append(shown, rl)
			maxV = math.Max(maxV, rl.value)
		} else if rl.value > 0 {
			off = append(off, rl)
		}
	}
	scale := niceMax(maxV)
	xOf := func(v float64) float64 { return left + plotW*v/scale }
	top := y + float64(len(shown))*(fontSize+4) // one label row per ceiling, above the bars
	bottom := s.bars(rows, left, top, xOf)
	s.line(left, top-4, left, bottom, "#999", 1, "")
	for k := 0; k <= 4; k++ {
		v := scale * float64(k) / 4
		s.line(xOf(v), bottom, xOf(v), bottom+4, "#999", 1, "")
		s.text(xOf(v), bottom+18, fontSize, "middle", "#444", human(v))
	}
	for i, rl := range shown {
		col, dash := refStyle(rl.name)
		ly := y + float64(i+1)*(fontSize+4) - 4
		s.line(xOf(rl.value), ly+3, xOf(rl.value), bottom, col, 1.6, dash)
		anchor, lx := "end", xOf(rl.value)-4
		if lx-textWidth(rl.name, fontSize) < left {
			anchor, lx = "start", xOf(rl.value)+4
		}
		s.text(lx, ly, fontSize, anchor, col, rl.name+" "+human(rl.value))
	}
	y = bottom + 36
	s.text(left, y, fontSize, "start", "#444", unit)
	for _, rl := range off {
		for _, l := range wrap(fmt.Sprintf("%s: %s, beyond the scale", rl.name, human(rl.value)), fontSize, width-left-20) {
			y += fontSize + 8
			s.text(left, y, fontSize, "start", "#444", l)
		}
	}
	s.h = y + 14
	return s.String()
}

// bars draws one bar per row from top and returns the y below the last.
func (s *svg) bars(rows []barRow, left, top float64, xOf func(float64) float64) float64 {
	const barH, gap = 18.0, 10.0
	for i, r := range rows {
		by := top + float64(i)*(barH+gap)
		s.text(left-8, by+barH-5, fontSize, "end", "#222", r.label)
		s.rect(left, by, xOf(r.median)-left, barH, r.color)
		if r.hi > r.lo {
			mid := by + barH/2
			s.line(xOf(r.lo), mid, xOf(r.hi), mid, "#222", 1.2, "")
			s.line(xOf(r.lo), mid-5, xOf(r.lo), mid+5, "#222", 1.2, "")
			s.line(xOf(r.hi), mid-5, xOf(r.hi), mid+5, "#222", 1.2, "")
		}
		s.text(math.Max(xOf(r.hi), xOf(r.median))+6, by+barH-5, fontSize, "start", "#222", human(r.median))
	}
	return top + float64(len(rows))*(barH+gap)
}

// stackRow is one system's CPU split by party.
type stackRow struct {
	label string
	parts []float64 // in the order of stackParts
}

var stackParts = [][2]string{{"bench process (load + clients)", "#8c564b"}, {"valkey", "#d62728"}, {"postgres", "#1f77b4"}, {"outside this run", "#bbbbbb"}}

// stackChart draws cores busy per party as stacked horizontal bars, out of the machine's cores.
func stackChart(title string, rows []stackRow, cores float64) string {
	const width = 760.0
	labelW := 0.0
	for _, r := range rows {
		labelW = math.Max(labelW, textWidth(r.label, fontSize))
	}
	left := labelW + 20
	plotW := width - left - 30
	s := &svg{w: width}
	y := s.title(10, 0, width-20, title)
	top := y
	xOf := func(v float64) float64 { return left + plotW*v/cores }
	const barH, gap = 18.0, 10.0
	for i, r := range rows {
		by := top + float64(i)*(barH+gap)
		s.text(left-8, by+barH-5, fontSize, "end", "#222", r.label)
		x := 0.0
		for k, v := range r.parts {
			v = math.Max(v, 0)
			if x+v > cores {
				v = cores - x
			}
			s.rect(xOf(x), by, xOf(x+v)-xOf(0), barH, stackParts[k][1])
			x += v
		}
	}
	bottom := top + float64(len(rows))*(barH+gap)
	for k := 0; k <= int(cores); k++ {
		dash := ""
		if k > 0 {
			dash = "4 3"
		}
		s.line(xOf(float64(k)), top-4, xOf(float64(k)), bottom+4, "#999", 1, dash)
		s.text(xOf(float64(k)), bottom+18, fontSize, "middle", "#444", fmt.Sprintf("%d", k))
	}
	y = bottom + 36
	s.text(left, y, fontSize, "start", "#444", "cores busy (CPU seconds ÷ wall seconds); colours: the section's legend")
	s.h = y + 14
	return s.String()
}
