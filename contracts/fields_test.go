package contracts_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/statements"
	"github.com/echomq/kit/protocol"
)

// TestFieldsMatchProtocol holds PROTOCOL.md's table "Fields and their domains" to
// protocol.Fields, row for row (the statement ids aside): the kit derives its inputs from the
// Go table, so the two must say the same.
func TestFieldsMatchProtocol(t *testing.T) {
	src, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(src), "| op | field | domain | when absent |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal("PROTOCOL.md has no table \"| op | field | domain | when absent |\"")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	space := regexp.MustCompile(`\s+`)
	norm := func(s string) string {
		return strings.TrimSpace(space.ReplaceAllString(statements.Tag.ReplaceAllString(s, ""), " "))
	}
	doc := strings.Split(strings.TrimSpace(table), "\n")
	want := protocol.FieldRows()
	for i := range max(len(doc), len(want)) {
		var d, w string
		if i < len(doc) {
			d = norm(doc[i])
		}
		if i < len(want) {
			w = norm(want[i])
		}
		if d != w {
			t.Errorf("row %d of PROTOCOL.md's fields table:\n  doc:  %s\n  Go:   %s", i+1, d, w)
		}
	}
}
