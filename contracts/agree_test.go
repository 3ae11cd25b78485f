package contracts_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/statements"
	"github.com/echomq/kit/lua"
)

// TestDocumentsAgree reads every statement that constrains a field, an op or a quantity of the
// canon — Part B's fields table, each op's row and its notes, the rules Part B states for every
// field, Part A's ranges, the canon's and lua/README.md's sentences, the scripts' headers — and
// fails on two that cannot both hold for one port (statements.Contradictions), naming both ids.
func TestDocumentsAgree(t *testing.T) {
	var claims []statements.Claim
	for _, d := range docs {
		src, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, statements.Claims(d.name, src)...)
	}
	fields := map[string]bool{} // the fields table's op.field subjects
	for _, c := range claims {
		if c.Doc == "contracts/PROTOCOL.md" && strings.Contains(c.Text, " | ") && strings.Count(c.Subject, ".") >= 1 && !strings.HasPrefix(c.Subject, "*") {
			fields[c.Subject] = true
		}
	}
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	scripted := map[string]bool{} // the ops that pass their fields to a script
	for _, s := range b.Scripts() {
		op := strings.TrimPrefix(s.Name, "lane_")
		if s.Name == "lane_enqueue" || op != s.Name && !fieldsOf(fields, s.Name) {
			op = "enqueue"
		}
		if s.Name != "lane_enqueue" {
			op = s.Name
		}
		scripted[op] = true
		claims = append(claims, statements.HeaderClaims(statements.HeaderOf(s.Name, s.Source), op, fields)...)
	}
	expand := func(generic string) []string {
		name := strings.TrimPrefix(generic, "*.")
		var out []string
		for f := range fields {
			op, path, _ := strings.Cut(f, ".")
			if scripted[op] && (path == name || strings.HasSuffix(path, "[]."+name)) {
				out = append(out, f)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range statements.Contradictions(claims, expand) {
		t.Errorf("the documents contradict themselves on %s", c)
	}
	// The check must be able to fail: the subjects it compares are read from every source.
	count := map[string]int{}
	for _, c := range claims {
		count[c.Subject+" "+string(c.Kind)]++
	}
	for _, want := range []string{"hello.minter_ttl_ms ignored", "hello.minter_ttl_ms range", "* strict", "op clock unsupported",
		"worker-id equal", "sequence-max equal", "renew-fraction equal", "min-version equal", "name-bytes equal", "lease-passed equal", "bundle-version equal",
		"*.lease_ms range", "claim.lease_ms range", "reap.limit default", "lane_ceiling.ceiling min"} {
		min := 1
		if strings.HasSuffix(want, " equal") {
			min = 2 // a quantity stated once is compared with nothing
		}
		if count[want] < min {
			t.Errorf("the documents' claims hold %d of %q, want at least %d: the reader missed a statement", count[want], want, min)
		}
	}
	t.Logf("%d claims compared", len(claims))
}

func fieldsOf(fields map[string]bool, op string) bool {
	for f := range fields {
		if strings.HasPrefix(f, op+".") {
			return true
		}
	}
	return false
}
