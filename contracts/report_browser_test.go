package contracts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/standing"
	"github.com/echomq/kit/internal/browsercheck"
)

// TestReportPageInBrowser renders a failing certification's report.html in headless Chromium:
// the failure heads the page (within the first screen of 900 CSS pixels), no text overflows its
// box and nothing is fetched. The screenshot stays outside the repository; the log says where.
func TestReportPageInBrowser(t *testing.T) {
	if _, err := browsercheck.Chromium(); err != nil {
		t.Skip("SKIP: " + err.Error())
	}
	r := mutantRun(t)
	if r.exit != 1 {
		t.Fatalf("the mutant run exited %d, want 1", r.exit)
	}
	shots, err := os.MkdirTemp("", "emq-report-shots-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := browsercheck.Check(ctx, filepath.Join(r.dir, "report.html"), filepath.Join(shots, "report.png"), 1000)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report.html screenshot: %s", res.Screenshot)
	if !res.OK() {
		t.Errorf("report.html in a browser: %v", res)
	}
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
			if r.Cells[1].Verdict == contracts.StatusNotOffered.String() {
				notOffered++
			}
			if r.Cells[2].Verdict == contracts.StatusFail.String() && r.Cells[2].Rule != "" {
				failed++
			}
		}
	}
	if notOffered == 0 || failed == 0 || !s.Implementations[0].Certified || !s.Implementations[1].Certified {
		t.Errorf("the Node port's cells not offered: %d, the mutant's failing cells with a rule: %d, certified: %v %v",
			notOffered, failed, s.Implementations[0].Certified, s.Implementations[1].Certified)
	}
	shots, err := os.MkdirTemp("", "emq-standing-shots-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := browsercheck.Check(ctx, filepath.Join(out, "standing.html"), filepath.Join(shots, "standing.png"), 1200)
	if errors.Is(err, browsercheck.ErrNoChromium) {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("standing.html screenshot: %s", res.Screenshot)
	if !res.OK() {
		t.Errorf("standing.html in a browser: %v", res)
	}
	if top, ok := res.Tops["implementations"]; !ok || top > 900 {
		t.Errorf("the implementations start %.0f px down the page (present: %v), want on the first screen", top, ok)
	}
}
