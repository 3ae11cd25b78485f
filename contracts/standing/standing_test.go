package standing_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/standing"
	"github.com/echomq/kit/contracts/verdict"
)

// folder writes a certification folder whose clauses all pass but those set in verdicts.
func folder(t *testing.T, port, kit string, verdicts map[string]verdict.Clause) string {
	t.Helper()
	var cls []verdict.Clause
	for _, id := range contracts.Clauses(false) {
		cl, ok := verdicts[id]
		if !ok {
			cl = verdict.Clause{Status: verdict.StatusPass}
		}
		cl.ID = id
		cls = append(cls, cl)
	}
	dir := filepath.Join(t.TempDir(), port)
	facts := report.Facts{Port: port, PortRuntime: "rt", KitVersion: kit, Bundle: "echomq:2.0.0",
		BundleDigest: "e36639a69646ef10669ce4a6616c8276e7e7256b", ValkeyVersion: "valkey 8.1.1"}
	if _, err := report.Write(dir, verdict.Summarize(contracts.Headings(), cls, nil), facts); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStanding: two certifications side by side — the cells carry each verdict and the rule a
// failure breaks, a clause not offered is neither, rows that differ are marked, contracts keep
// canon order, and a folder without a valid report.json is refused.
func TestStanding(t *testing.T) {
	fail := verdict.Clause{Status: verdict.StatusFail, Failures: []verdict.Failure{{Rule: "retry", Quote: `canon §4.2 retry: "…"`, Expected: "retried", Got: "dead"}}}
	offered := verdict.Clause{Status: verdict.StatusNotOffered, Reason: "the port does not declare the batch capability"}
	a := folder(t, "alpha", contracts.KitVersion, nil)
	b := folder(t, "beta", "0.0.1", map[string]verdict.Clause{"C09/retry/zero-delay-back-to-pending": fail, "C06/claim/claim-batch": offered})
	s, err := standing.Read([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Implementations) != 2 || s.Implementations[1].Certified || !s.Implementations[0].Certified || s.Implementations[1].Counts.NotOffered != 1 {
		t.Fatalf("implementations: %+v", s.Implementations)
	}
	if len(s.Contracts) != 14 || s.Contracts[0].ID != "C01" || s.Contracts[13].ID != "C14" {
		t.Fatalf("contracts out of canon order: %d", len(s.Contracts))
	}
	cell := func(id string, i int) (standing.Cell, bool) {
		for _, c := range s.Contracts {
			for _, r := range c.Clauses {
				if r.ID == id {
					return r.Cells[i], r.Agree
				}
			}
		}
		t.Fatalf("no row %s", id)
		return standing.Cell{}, false
	}
	if c, agree := cell("C09/retry/zero-delay-back-to-pending", 1); c.Verdict != "FAIL" || c.Rule != "retry" || c.Quote == "" || agree {
		t.Errorf("the failing cell: %+v (agree %v)", c, agree)
	}
	if c, _ := cell("C06/claim/claim-batch", 1); c.Verdict != "NOT RUN (not offered)" || c.Rule != "" {
		t.Errorf("the cell not offered: %+v", c)
	}
	if c, agree := cell("C01/fence/hello-and-fence-first", 0); c.Verdict != "PASS" || !agree {
		t.Errorf("a clause both pass: %+v (agree %v)", c, agree)
	}
	if st := s.Contracts[8].Statuses; st[0] != "PASS" || st[1] != "FAIL" {
		t.Errorf("C09's statuses %v", st)
	}
	if len(s.Notes) == 0 || !strings.Contains(strings.Join(s.Notes, "\n"), "different kit versions") {
		t.Errorf("notes %v: the kits differ", s.Notes)
	}
	out := t.TempDir()
	if err := standing.Write(out, s); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(out, "standing.html"))
	for _, want := range []string{`<code>retry</code>`, `#C09/retry/zero-delay-back-to-pending`, `>not offered<`, `class="differs"`, "CONFORMANCE 14/14 — certified", "CONFORMANCE 13/14 — not certified"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("standing.html lacks %q", want)
		}
	}
	if js, err := os.ReadFile(filepath.Join(out, "standing.json")); err != nil || !bytes.Contains(js, []byte(`"rule": "retry"`)) {
		t.Errorf("standing.json: %v", err)
	}

	empty := t.TempDir()
	if _, err := standing.Read([]string{a, empty}); !errors.Is(err, standing.ErrInput) || !strings.Contains(err.Error(), empty) {
		t.Errorf("a folder without report.json: %v, want ErrInput naming it", err)
	}
	if err := os.WriteFile(filepath.Join(empty, "report.json"), []byte(`{"facts":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := standing.Read([]string{empty}); !errors.Is(err, report.ErrSchema) {
		t.Errorf("a report.json that does not match the schema: %v", err)
	}
}
