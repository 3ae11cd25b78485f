package known_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/known"
	"github.com/echomq/kit/contracts/verdict"
)

func TestPatterns(t *testing.T) {
	ids := []string{"C09/retry/zero-delay-back-to-pending", "C09/retry/fields", "C10/dead/fields", "C10/dead/morgue-limit-at-its-maximum", "C04/kind/refusal-order"}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"C09/retry/fields", []string{"C09/retry/fields"}},
		{"C10/dead/*", []string{"C10/dead/fields", "C10/dead/morgue-limit-at-its-maximum"}},
		{"*/*/fields", []string{"C09/retry/fields", "C10/dead/fields"}},
		{"**/fields", []string{"C09/retry/fields", "C10/dead/fields"}},
		{"C04", []string{"C04/kind/refusal-order"}}, // a contract id alone: all of it
		{"c4", []string{"C04/kind/refusal-order"}},
		{"C09/**", []string{"C09/retry/zero-delay-back-to-pending", "C09/retry/fields"}},
		{"**", ids},
		{"C09/*", nil}, // * is one component: C09/retry/x has three
		{"C09/retry", nil},
	} {
		p, err := known.Parse(c.pattern, "test")
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		var got []string
		for _, id := range ids {
			if p.Match(id) {
				got = append(got, id)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s matches %v, want %v", c.pattern, got, c.want)
		}
	}
	for _, bad := range []string{"C09/retry/zero-*", "C09//fields", "C09/re try/x"} {
		if _, err := known.Parse(bad, "f:1"); !errors.Is(err, known.ErrPattern) || !strings.Contains(err.Error(), "f:1") {
			t.Errorf("%q: %v, want ErrPattern saying where", bad, err)
		}
	}
}

// TestLoadAndStale: a list is read from entries and @files (comments and blank lines aside), and
// the patterns that match no clause of the kit are named with where they were written.
func TestLoadAndStale(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known-failing.txt")
	if err := os.WriteFile(file, []byte("# gaps we know\n\nC10/dead/*   # the morgue\nC99/x/y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := known.Load([]string{"C04/kind/refusal-order", "@" + file}, "known-failing")
	if err != nil || len(ps) != 3 {
		t.Fatalf("Load: %v, %d patterns", err, len(ps))
	}
	l := &known.Lists{Failing: ps}
	stale := l.Unmatched(contracts.Clauses(false))
	if len(stale) != 1 || !strings.Contains(stale[0], `"C99/x/y" (`+file+`:4)`) {
		t.Errorf("stale: %v, want the one pattern that matches nothing, with its file and line", stale)
	}
	if _, err := known.Load([]string{"@" + file + ".missing"}, "known-failing"); err == nil {
		t.Error("a missing file is read as an empty list")
	}
}

// TestSummarizeWithKnownLists: a failed clause a known-failing pattern names is KNOWN FAILING,
// one a known-flaky pattern names KNOWN FLAKY (neither fails the run, neither passes its
// contract); a known-failing clause that passed is stale and the run is not certified; a
// known-flaky clause that passed is a pass.
func TestSummarizeWithKnownLists(t *testing.T) {
	var cls []verdict.Clause
	for _, id := range contracts.Clauses(false) {
		cl := verdict.Clause{ID: id, Status: verdict.StatusPass}
		if id == "C09/retry/fields" || id == "C10/dead/fields" || id == "C11/reap/fields" {
			cl.Status, cl.Failures = verdict.StatusFail, []verdict.Failure{{Rule: "r", Quote: "q", Got: "g"}}
		}
		cls = append(cls, cl)
	}
	must := func(s ...string) []known.Pattern {
		ps, err := known.Load(s, "test")
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	l := &known.Lists{Failing: must("C09/retry/fields", "C12/rotate/fields"), Flaky: must("C10/**", "C11/reap/fields")}
	r := verdict.Summarize(contracts.Headings(), cls, l)
	status := func(id string) verdict.Status {
		for _, c := range r.Contracts {
			if c.ID == id {
				return c.Status
			}
		}
		return 0
	}
	for id, want := range map[string]verdict.Status{"C09": verdict.StatusKnownFailing, "C10": verdict.StatusKnownFlaky, "C11": verdict.StatusKnownFlaky, "C12": verdict.StatusPass, "C01": verdict.StatusPass} {
		if got := status(id); got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	if len(r.Stale) != 1 || !strings.HasPrefix(r.Stale[0], "C12/rotate/fields is listed as known failing but passed") || r.Certified {
		t.Errorf("stale %v, certified %v: want C12/rotate/fields stale and no certification", r.Stale, r.Certified)
	}
	if r.Passed != 11 {
		t.Errorf("%d contracts passed, want 11 (C09, C10, C11 failed as listed)", r.Passed)
	}
}
