package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
)

// result is a certification run of C09 and C10 in which C09 fails two clauses (a long failure
// and a short one), C10 has a clause not run, and the rest pass.
func result(filtered bool) *verdict.Result {
	long := verdict.Failure{Rule: "walk-model", Quote: "the model", Expected: "a", Got: strings.Repeat("step\n", 40)}
	short := verdict.Failure{Rule: "retry", Quote: `canon §4 retry: "…"`, Expected: "retried", Got: "dead"}
	var clauses []verdict.Clause
	for _, id := range contracts.Clauses(false) {
		cl := verdict.Clause{ID: id, Status: verdict.StatusPass}
		switch {
		case id == "C09/retry/walk-retry":
			cl.Status, cl.Failures = verdict.StatusFail, []verdict.Failure{long}
		case id == "C09/retry/zero-delay-back-to-pending":
			cl.Status, cl.Failures = verdict.StatusFail, []verdict.Failure{short}
		case id == "C10/dead/max-attempts-to-morgue":
			cl.Status, cl.Reason = verdict.StatusNotRun, "this clause needs a wrong-kind server"
		}
		clauses = append(clauses, cl)
	}
	var headings []verdict.ContractResult
	for _, c := range contracts.All() {
		headings = append(headings, verdict.ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule})
	}
	r := verdict.Summarize(headings, clauses, nil)
	r.Filtered = filtered
	return r
}

func TestConsoleLeadsWithTheSimplestFailure(t *testing.T) {
	r := result(false)
	f := report.Failures(r, 24)
	if i, j := strings.Index(f, "zero-delay-back-to-pending FAIL"), strings.Index(f, "walk-retry FAIL"); i < 0 || j < 0 || i > j {
		t.Errorf("C09's short failure does not come before its walk:\n%s", f)
	}
	by := report.ByRule(r)
	for _, want := range []string{"FAILED: 3 clause(s)", `canon §4 retry: "…"` + "\n    C09/retry/zero-delay-back-to-pending", "NOT RUN: this clause needs"} {
		if !strings.Contains(by, want) {
			t.Errorf("the failed ids by rule lack %q:\n%s", want, by)
		}
	}
	rp := report.Replay(r, "", "node my port's.js", 7)
	want := `replay: emq-conform -port 'node my port'\''s.js' -focus '^(C09/retry/zero-delay-back-to-pending|C09/retry/walk-retry|C10/dead/max-attempts-to-morgue)$' -seed 7`
	if rp != want {
		t.Errorf("replay line\n got %s\nwant %s", rp, want)
	}
	if sel, err := contracts.Select(false, nil, []string{`^(C09/retry/zero-delay-back-to-pending|C09/retry/walk-retry|C10/dead/max-attempts-to-morgue)$`}); err != nil || len(sel) != 3 {
		t.Errorf("the replay's focus selects %v (%v), want the three clauses", sel, err)
	}
}

// TestJUnitFailsWhatDidNotRun: in a certification run a clause not run is a JUnit failure with
// its reason; in a filtered run it is skipped.
func TestJUnitFailsWhatDidNotRun(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := report.Write(dir, result(filtered), report.Facts{Port: "p"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
		if err != nil {
			t.Fatal(err)
		}
		notRun := []byte(`<failure message="not run: this clause needs a wrong-kind server">`)
		if filtered {
			notRun = []byte(`<skipped message="not run: this clause needs a wrong-kind server">`)
		}
		if !bytes.Contains(b, notRun) {
			t.Errorf("filtered %v: junit.xml lacks %s:\n%s", filtered, notRun, b)
		}
	}
}
