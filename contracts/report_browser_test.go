package contracts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/echomq/kit/internal/browsercheck"
)

// TestReportPageInBrowser renders a failing certification's report.html in headless Chromium:
// the failure heads the page (within the first screen of 900 CSS pixels), no text overflows its
// box and nothing is fetched. The screenshot stays outside the repository, kept only when the
// test fails; the log says where.
func TestReportPageInBrowser(t *testing.T) {
	if _, err := browsercheck.Chromium(); err != nil {
		t.Skip("SKIP: " + err.Error())
	}
	r := selftest(t, nil, "-mutant", "complete-any-token", "-admit-mutant-scripts", "-label", "C07,C08")
	if r.exit != 1 {
		t.Fatalf("the mutant run exited %d, want 1", r.exit)
	}
	shots, err := os.MkdirTemp("", "emq-report-shots-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // kept for a failed run only: a green run leaves nothing behind
		if !t.Failed() {
			os.RemoveAll(shots)
		}
	})
	// No deadline of the test's own: Chromium takes what a busy machine gives it; a hang is the
	// go test -timeout's to report.
	res, err := browsercheck.Check(context.Background(), filepath.Join(r.dir, "report.html"), filepath.Join(shots, "report.png"), 1000)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html screenshot (kept if the test fails): %s", res.Screenshot)
	if !res.OK() {
		t.Errorf("report.html in a browser: %v", res)
	}
	if top, ok := res.Tops["failures"]; !ok || top > 900 {
		t.Errorf("the failed clauses start %.0f px down the page (present: %v), want on the first screen (≤ 900)", top, ok)
	}
}
