package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
)

// result is a certification run in which C09 fails two clauses (a long failure and a short
// one), C10 has a clause not run, the batch clauses are not offered, and the rest pass.
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
		case strings.Contains(id, "batch"):
			cl.Status, cl.Reason = verdict.StatusNotOffered, "the port does not declare the batch capability"
		}
		clauses = append(clauses, cl)
	}
	r := verdict.Summarize(contracts.Headings(), clauses, nil)
	r.Filtered = filtered
	return r
}

// facts are a run's facts as the runner writes them.
var facts = report.Facts{Port: "p", PortRuntime: "go1.26", PortCommand: "./p", KitVersion: contracts.KitVersion,
	Bundle: "echomq:2.0.0", BundleDigest: "e36639a69646ef10669ce4a6616c8276e7e7256b", ValkeyVersion: "valkey 8.1.1"}

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
		if _, err := report.Write(dir, result(filtered), facts); err != nil {
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

// TestNotOfferedIsNeitherPassNorFail: a clause not offered is never counted as a failure nor as
// a pass, in any output: the console lists it apart from the failures, report.html's failed
// clauses leave it out (a section of its own says it), JUnit has it skipped, report.json counts
// it on its own.
func TestNotOfferedIsNeitherPassNorFail(t *testing.T) {
	r := result(false)
	offered := 0
	for _, c := range r.Contracts {
		for _, cl := range c.Clauses {
			if cl.Status == verdict.StatusNotOffered {
				offered++
			}
		}
	}
	if offered < 5 {
		t.Fatalf("the fixture has %d clauses not offered", offered)
	}
	// Console.
	if f := report.Failures(r, 24); strings.Contains(f, "batch") {
		t.Errorf("the console's failures show a clause not offered:\n%s", f)
	}
	if by := report.ByRule(r); strings.Contains(by, "batch") || !strings.Contains(by, "FAILED: 3 clause(s)") {
		t.Errorf("the failed ids by rule count a clause not offered:\n%s", by)
	}
	if n := report.NotOffered(r); !strings.Contains(n, fmt.Sprintf("NOT OFFERED: %d clause(s), neither passed nor failed", offered)) ||
		!strings.Contains(n, "C02/mint/enqueue-batch-rows") {
		t.Errorf("the console does not list the clauses not offered:\n%s", n)
	}
	if rp := report.Replay(r, "", "p", 0); strings.Contains(rp, "batch") {
		t.Errorf("the replay line runs a clause not offered: %s", rp)
	}
	dir := t.TempDir()
	if _, err := report.Write(dir, r, facts); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// HTML: 2 failed clauses and the not-run one apart; the not offered ones in their own section.
	html := read("report.html")
	for _, want := range []string{"Failed clauses (2)", fmt.Sprintf("Not offered (%d): neither passed nor failed", offered), "Clauses not run (1)"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// JUnit: skipped, with the reason; the totals say so.
	junit := read("junit.xml")
	if n := strings.Count(junit, `<skipped message="not offered: the port does not declare the batch capability">`); n != offered {
		t.Errorf("junit.xml has %d clauses skipped as not offered, want %d", n, offered)
	}
	if !strings.Contains(junit, fmt.Sprintf(`failures="3" errors="0" skipped="%d"`, offered)) {
		t.Errorf("junit.xml's totals do not count the clauses not offered as skipped:\n%.400s", junit)
	}
	// JSON: counted apart.
	rep, err := report.ReadJSON(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := report.Counts{Pass: len(contracts.Clauses(false)) - 3 - offered, Fail: 2, NotOffered: offered, NotRun: 1}
	if rep.Counts != want {
		t.Errorf("report.json counts %+v, want %+v", rep.Counts, want)
	}
	if !strings.Contains(read("report.json"), `"verdict": "NOT RUN (not offered)"`) {
		t.Errorf("report.json does not give a clause not offered its own verdict")
	}
}
