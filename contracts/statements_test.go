package contracts_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/statements"
	"github.com/echomq/kit/lua"
)

// docs are the documents whose statements the kit traces, by their path from contracts/.
var docs = []struct{ path, name string }{
	{"CANON.md", "contracts/CANON.md"},
	{"PROTOCOL.md", "contracts/PROTOCOL.md"},
	{"../lua/README.md", "lua/README.md"},
}

// allStatements reads every statement of the documents and the script headers, failing t on a
// normative sentence without an id and on an id written twice.
func allStatements(t *testing.T) []statements.Statement {
	t.Helper()
	var all []statements.Statement
	for _, d := range docs {
		src, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		st, untagged := statements.Of(d.name, src)
		for _, u := range untagged {
			t.Errorf("%s:%d reads as a statement but has no id ([§N-k], [A16-k], [B-k], [L-k] after the sentence): %.160s", d.name, u.Line, u.Text)
		}
		all = append(all, st...)
	}
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Scripts() {
		all = append(all, statements.OfHeader(statements.HeaderOf(s.Name, s.Source))...)
	}
	seen := map[string]string{}
	for _, s := range all {
		if where, ok := seen[s.ID]; ok {
			t.Errorf("statement id %s is written twice: %s and %s:%d", s.ID, where, s.Doc, s.Line)
		}
		seen[s.ID] = fmt.Sprintf("%s:%d", s.Doc, s.Line)
	}
	return all
}

// TestStatements holds the documents to the statement trace: every normative sentence has an
// id, every id is traced to rules that exist or listed as not checked (and then PROTOCOL.md's
// "Statements the kit does not check" says so, with the same reason), and nothing is traced that
// no document states; a traced statement is proven by a catalogue mutant that breaks it, or
// listed in statements/unproven.txt (checkProven). It prints the counts. That every traced rule
// is evaluated by a clause and broken by a killed mutant is TestTraceability's part.
func TestStatements(t *testing.T) {
	all := allStatements(t)
	trace, skip := statements.Trace(), statements.NotChecked()
	known := map[string]bool{}
	for _, r := range slices.Concat(rules.All(), rules.Cluster()) {
		known[r.ID] = true
	}
	ids := map[string]bool{}
	var traced []string
	unchecked := 0
	for _, s := range all {
		ids[s.ID] = true
		ruleIDs, isTraced := trace[s.ID]
		why, isSkipped := skip[s.ID]
		switch {
		case isTraced && isSkipped:
			t.Errorf("statement %s (%s) is both traced and listed as not checked", s.ID, s.Doc)
		case isTraced:
			traced = append(traced, s.ID)
			if len(ruleIDs) == 0 {
				t.Errorf("statement %s (%s) is traced to no rule", s.ID, s.Doc)
			}
			for _, r := range ruleIDs {
				if !known[r] {
					t.Errorf("statement %s is traced to rule %q, which no clause quotes", s.ID, r)
				}
			}
		case isSkipped:
			unchecked++
			if strings.TrimSpace(why) == "" {
				t.Errorf("statement %s is listed as not checked without a reason", s.ID)
			}
		default:
			t.Errorf("statement %s (%s:%d) is neither traced to a rule nor listed as not checked: %.160s", s.ID, s.Doc, s.Line, s.Text)
		}
	}
	for id := range trace {
		if !ids[id] {
			t.Errorf("the trace names statement %s, which no document states", id)
		}
	}
	for id := range skip {
		if !ids[id] {
			t.Errorf("the not-checked list names statement %s, which no document states", id)
		}
	}
	notCheckedSection(t, skip)
	proven, unproven := checkProven(t, traced)
	line := fmt.Sprintf("statements %d, traced %d, proven %d, unproven %d, not checked %d", len(all), len(traced), proven, unproven, unchecked)
	t.Log(line)
	fmt.Println(line)
}

// notCheckedSection holds PROTOCOL.md's table of the statements the kit does not check to the
// list (between its two markers; -update writes it from the list).
func notCheckedSection(t *testing.T, skip map[string]string) {
	t.Helper()
	src, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- not-checked:begin -->\n", "<!-- not-checked:end -->"
	head, rest, ok1 := strings.Cut(string(src), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("PROTOCOL.md has no %q … %q markers for the statements the kit does not check", strings.TrimSpace(begin), end)
	}
	var b strings.Builder
	b.WriteString("| statement | why the kit does not check it |\n|---|---|\n")
	for _, id := range slices.Sorted(maps.Keys(skip)) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", id, strings.ReplaceAll(skip[id], "|", "\\|"))
	}
	fresh := head + begin + b.String() + end + tail
	if fresh == string(src) {
		return
	}
	if *update {
		if err := os.WriteFile("PROTOCOL.md", []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("PROTOCOL.md's \"Statements the kit does not check\" differs from the kit's list (go test ./contracts -run TestStatements -update rewrites it)")
}
