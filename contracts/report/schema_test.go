package report_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/known"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
)

// TestReportMatchesSchema: report.json as Write writes it — a certification run, a filtered one,
// one with known lists and a stale entry — matches the published schema, which is written beside
// it; the schema's verdicts are exactly the kit's statuses; and the schema refuses a report.json
// that lies about its shape (so the check can fail). Every report.json the kit's own tests read
// (report.ReadJSON, the contracts' end-to-end runs) is held to it too.
func TestReportMatchesSchema(t *testing.T) {
	withLists := result(false)
	l := &known.Lists{}
	l.Failing, _ = known.Load([]string{"C09/retry/walk-retry", "C03/duplicate/second-enqueue-changes-nothing"}, "test")
	var all []verdict.Clause
	for _, c := range withLists.Contracts {
		all = append(all, c.Clauses...)
	}
	withLists = verdict.Summarize(contracts.Headings(), all, l)
	for name, r := range map[string]*verdict.Result{"certification": result(false), "filtered": result(true), "known lists": withLists} {
		dir := t.TempDir()
		if _, err := report.Write(dir, r, facts); err != nil {
			t.Fatal(err)
		}
		if _, err := report.ReadJSON(filepath.Join(dir, "report.json")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "report.schema.json")); err != nil || string(b) != string(report.Schema()) {
			t.Errorf("%s: the certification folder does not hold the schema (%v)", name, err)
		}
	}
	if len(withLists.Stale) == 0 {
		t.Fatal("the fixture with known lists has no stale entry")
	}

	var doc struct {
		Defs struct {
			Verdict struct {
				Enum []string `json:"enum"`
			} `json:"verdict"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(report.Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for st := verdict.Status(0); !strings.HasPrefix(st.String(), "Status("); st++ {
		statuses = append(statuses, st.String())
	}
	if !slices.Equal(doc.Defs.Verdict.Enum, statuses) {
		t.Errorf("the schema's verdicts %q, the kit's statuses %q", doc.Defs.Verdict.Enum, statuses)
	}

	dir := t.TempDir()
	if _, err := report.Write(dir, result(false), facts); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lie := range []struct{ from, to string }{
		{`"verdict": "PASS"`, `"verdict": "PASSED"`},
		{`"not_offered": `, `"skipped": `},
		{`"certified": false`, `"certified": "no"`},
		{`"total": 14`, `"total": 13`},
		{`"id": "C09/retry/walk-retry"`, `"id": "C09 walk-retry"`},
	} {
		bad := strings.Replace(string(good), lie.from, lie.to, 1)
		if bad == string(good) {
			t.Fatalf("the fixture's report.json has no %s", lie.from)
		}
		if err := report.Validate([]byte(bad)); !errors.Is(err, report.ErrSchema) {
			t.Errorf("report.json with %s instead of %s: %v, want ErrSchema", lie.to, lie.from, err)
		}
	}
}
