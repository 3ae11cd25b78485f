package browsercheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/echomq/kit/internal/browsercheck"
)

func check(t *testing.T, page string) browsercheck.Result {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "page.html")
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	// No deadline of the test's own: Chromium's start-up takes what the machine gives it; a
	// hang is the go test -timeout's to report.
	r, err := browsercheck.Check(context.Background(), p, filepath.Join(dir, "shot.png"), 800)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The check can fail: an overflowing label, a label past its SVG's edge, an empty plot and a
// request each show; a clean page shows nothing.
func TestCheckFindsWhatAReaderTripsOver(t *testing.T) {
	clean := check(t, `<!doctype html><html><body><p data-fit>fits</p>
<svg width="200" height="50" viewBox="0 0 200 50"><rect width="200" height="50" fill="white"/><polyline points="0,0 10,10" stroke="red"/><text x="10" y="30">ok</text></svg></body></html>`)
	if !clean.OK() {
		t.Fatalf("a clean page was flagged: %v", clean)
	}
	bad := check(t, `<!doctype html><html><body>
<p data-fit style="width:100px;white-space:nowrap;overflow:hidden">a label much too long for its hundred pixel box</p>
<svg width="120" height="40" viewBox="0 0 120 40"><rect width="120" height="40" fill="white"/><polyline points="0,0 5,5"/><text x="10" y="25">a legend cut at the edge of its picture</text></svg>
<svg width="100" height="40" viewBox="0 0 100 40"><rect width="100" height="40" fill="white"/><text x="5" y="20">no data</text></svg>
<img src="http://plots.invalid/x.png" alt=""></body></html>`)
	if len(bad.Overflow) != 2 || len(bad.EmptyPlots) != 1 || len(bad.Requests) != 1 {
		t.Fatalf("want 2 overflows, 1 empty plot, 1 request; got %v", bad)
	}
}
