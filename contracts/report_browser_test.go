package contracts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/standing"
	"github.com/echomq/kit/contracts/verdict"
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
	r := mutantRun(t)
	if r.exit != 1 {
		t.Fatalf("the mutant run exited %d, want 1", r.exit)
	}
	res := inBrowser(t, filepath.Join(r.dir, "report.html"), 1000)
	if top, ok := res.Tops["failures"]; !ok || top > 900 {
		t.Errorf("the failed clauses start %.0f px down the page (present: %v), want on the first screen (≤ 900)", top, ok)
	}
}

// TestStandingPageInBrowser sets the kit's two ports side by side with a failing certification
// (the reference in-process, the Node port certified by ci/certify-port.sh, the reference with a
// mutant on C07 and C08) and renders standing.html in headless Chromium: the implementations
// head the page, no text overflows its box, nothing is fetched; the Node port's batch clauses are
// not offered, never failed, and the mutant's failures name their rule.
func TestStandingPageInBrowser(t *testing.T) {
	if _, err := browsercheck.Chromium(); err != nil {
		t.Skip("SKIP: " + err.Error())
	}
	runs := []*run{shared(t), nodeCertified(t), mutantRun(t)}
	var folders []string
	for _, r := range runs {
		folders = append(folders, r.dir)
	}
	s, err := standing.Read(folders)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := standing.Write(out, s); err != nil {
		t.Fatal(err)
	}
	var notOffered, failed int
	for _, c := range s.Contracts {
		for _, r := range c.Clauses {
			if r.Cells[1].Verdict == verdict.StatusNotOffered.String() {
				notOffered++
			}
			if r.Cells[2].Verdict == verdict.StatusFail.String() && r.Cells[2].Rule != "" {
				failed++
			}
		}
	}
	if notOffered == 0 || failed == 0 || !s.Implementations[0].Certified || !s.Implementations[1].Certified {
		t.Errorf("the Node port's cells not offered: %d, the mutant's failing cells with a rule: %d, certified: %v %v",
			notOffered, failed, s.Implementations[0].Certified, s.Implementations[1].Certified)
	}
	res := inBrowser(t, filepath.Join(out, "standing.html"), 1200)
	if top, ok := res.Tops["implementations"]; !ok || top > 900 {
		t.Errorf("the implementations start %.0f px down the page (present: %v), want on the first screen", top, ok)
	}
}

// inBrowser renders page in headless Chromium at width CSS pixels, fails t on text that
// overflows its box or a request the page makes, and logs where the screenshot is (outside the
// repository).
func inBrowser(t *testing.T, page string, width int) browsercheck.Result {
	t.Helper()
	shots, err := os.MkdirTemp("", "emq-page-shots-")
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
	name := filepath.Base(page)
	res, err := browsercheck.Check(context.Background(), page, filepath.Join(shots, strings.TrimSuffix(name, ".html")+".png"), width)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s screenshot (kept if the test fails): %s", name, res.Screenshot)
	if !res.OK() {
		t.Errorf("%s in a browser: %v", name, res)
	}
	return res
}
