// Package browsercheck renders a self-contained HTML page in headless Chromium, as a reader
// would see it, and reports what a reader would trip over: text that overflows its box (an
// element's scrollWidth past its clientWidth; an SVG label past its picture's edge), a plot with
// nothing drawn in it, and any request the page makes. It also saves a screenshot.
package browsercheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNoChromium says no Chromium binary was found; tests skip on it, saying so.
var ErrNoChromium = errors.New("browsercheck: no chromium (install Debian's chromium package: ci/provision-chromium.sh)")

// Result is what the page did wrong; empty slices mean nothing.
type Result struct {
	Overflow   []string `json:"overflow"`    // labelled elements or SVG texts that do not fit
	EmptyPlots []string `json:"empty_plots"` // SVG pictures with no mark (bar, line, curve)
	Requests   []string `json:"requests"`    // every resource the page asked for
	// Tops holds, for each element marked data-first-screen="name", how far below the top of the
	// page it starts, in CSS pixels: what a reader sees without scrolling.
	Tops       map[string]float64 `json:"tops"`
	Screenshot string             `json:"-"`
}

// OK reports whether nothing was found.
func (r Result) OK() bool { return len(r.Overflow)+len(r.EmptyPlots)+len(r.Requests) == 0 }

func (r Result) String() string {
	return fmt.Sprintf("overflow %q; empty plots %q; requests %q", r.Overflow, r.EmptyPlots, r.Requests)
}

// Chromium finds the browser binary.
func Chromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// probe runs inside the page after it has rendered. Which elements are "labelled": those marked
// data-fit, table cells, headings, paragraphs and preformatted blocks.
const probe = `<script>
(function () {
  var res = {overflow: [], empty_plots: [], requests: [], tops: {}};
  document.querySelectorAll('[data-first-screen]').forEach(function (e) {
    res.tops[e.getAttribute('data-first-screen')] = e.getBoundingClientRect().top + window.scrollY;
  });
  var short = function (s) { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > 80 ? s.slice(0, 80) + '…' : s; };
  document.querySelectorAll('[data-fit], td, th, h1, h2, h3, p, pre, summary, li').forEach(function (e) {
    if (e.closest('[data-probe]')) return;
    if (e.scrollWidth > e.clientWidth + 1) res.overflow.push(e.tagName.toLowerCase() + ': ' + short(e.textContent));
  });
  document.querySelectorAll('svg').forEach(function (svg, i) {
    var vb = svg.viewBox && svg.viewBox.baseVal;
    var w = vb && vb.width ? vb.width : svg.width.baseVal.value, h = vb && vb.height ? vb.height : svg.height.baseVal.value;
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBBox();
      if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > w + 0.5 || b.y + b.height > h + 0.5) res.overflow.push('svg text: ' + short(t.textContent));
    });
    var marks = svg.querySelectorAll('polyline, path, circle, rect[data-mark], rect:not([width="' + w + '"])');
    if (marks.length === 0) res.empty_plots.push('svg #' + (i + 1) + ': ' + short((svg.querySelector('text') || {}).textContent));
  });
  performance.getEntriesByType('resource').forEach(function (r) { res.requests.push(r.name); });
  // A request that failed or has not finished leaves no timing entry: scan what would load.
  document.querySelectorAll('[src], link[href], image, use, object[data], iframe').forEach(function (e) {
    if (e.closest('[data-probe]') || e.tagName.toLowerCase() === 'script' && !e.src) return;
    var u = e.getAttribute('src') || e.getAttribute('href') || e.getAttribute('xlink:href') || e.getAttribute('data') || '';
    if (u && u.charAt(0) !== '#' && u.indexOf('data:') !== 0 && res.requests.indexOf(e.src || u) < 0) res.requests.push(e.src || u);
  });
  document.querySelectorAll('style').forEach(function (st) {
    var m = st.textContent.match(/(@import|url\()[^;)]*/g);
    if (m) m.forEach(function (x) { if (x.indexOf('data:') < 0) res.requests.push('css ' + x); });
  });
  var out = document.createElement('pre');
  out.id = 'browsercheck-result';
  out.setAttribute('data-probe', '1');
  out.textContent = JSON.stringify(res);
  document.body.appendChild(out);
})();
</script>`

var resultRE = regexp.MustCompile(`(?s)<pre id="browsercheck-result"[^>]*>(.*?)</pre>`)

// Check renders page (an HTML file) at width CSS pixels, writes a screenshot to shot (a .png)
// and returns what the probe found. The browser runs with its network pointed nowhere: a
// request shows in Result.Requests and never leaves the machine.
func Check(ctx context.Context, page, shot string, width int) (Result, error) {
	bin, err := Chromium()
	if err != nil {
		return Result{}, err
	}
	src, err := os.ReadFile(page)
	if err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp("", "browsercheck-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	probed := filepath.Join(dir, "page.html")
	s := string(src)
	if i := strings.LastIndex(strings.ToLower(s), "</body>"); i >= 0 {
		s = s[:i] + probe + s[i:]
	} else {
		s += probe
	}
	if err := os.WriteFile(probed, []byte(s), 0o644); err != nil {
		return Result{}, err
	}
	run := func(extra ...string) ([]byte, error) {
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
			"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
			"--user-data-dir=" + filepath.Join(dir, "profile"), fmt.Sprintf("--window-size=%d,2400", width)}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		// Chromium's own temporary files go under dir too, removed with it: a Chromium that is
		// killed leaves its org.chromium.Chromium.* folder behind.
		cmd.Env = append(os.Environ(), "TMPDIR="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("browsercheck: chromium: %w: %s", err, tail(stderr.String()))
		}
		return out, nil
	}
	dom, err := run("--dump-dom", "--virtual-time-budget=2000", "file://"+probed)
	if err != nil {
		return Result{}, err
	}
	m := resultRE.FindSubmatch(dom)
	if m == nil {
		return Result{}, fmt.Errorf("browsercheck: the probe left no result (did the page render?)")
	}
	var r Result
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &r); err != nil {
		return Result{}, fmt.Errorf("browsercheck: probe result: %w", err)
	}
	if shot != "" {
		if _, err := run("--screenshot="+shot, "file://"+page); err != nil {
			return r, err
		}
		r.Screenshot = shot
	}
	return r, nil
}

func tail(s string) string {
	if len(s) > 600 {
		return "…" + s[len(s)-600:]
	}
	return s
}
