// Package archtest holds the checks that keep ARCHITECTURE.md's arrows true.
package archtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/echomq/kit/"

// deps lists the kit's own packages pkg imports, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, mod) {
			own = append(own, strings.TrimPrefix(p, mod))
		}
	}
	return own
}

func TestArrowsPointDown(t *testing.T) {
	cases := []struct {
		pkg       string
		forbidden []string // prefixes pkg must not depend on
	}{
		{"drivers", []string{"contracts"}},
		{"drivers/inproc", []string{"contracts", "internal/mutant"}},
		{"drivers/subprocess", []string{"contracts"}},
		{"reference/bus", []string{"contracts", "drivers", "internal/mutant"}},
		{"reference/resp", []string{"reference/emqerr", "reference/bus", "lua", "reference/keys"}},
		{"protocol", []string{"contracts", "drivers", "reference"}},
	}
	for _, c := range cases {
		for _, d := range deps(t, c.pkg) {
			for _, f := range c.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s: ARCHITECTURE.md says it must not", c.pkg, d)
				}
			}
		}
	}
}

// One file per contract, c01_fence.go … c14_park.go, each declaring its contract once.
func TestOneFilePerContract(t *testing.T) {
	files, err := filepath.Glob("../../contracts/c[01][0-9]_*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 14 {
		t.Fatalf("%d contract files, want 14: %v", len(files), files)
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decl := fmt.Sprintf("var c%02d = Contract{ID: \"C%02d\"", i+1, i+1)
		if strings.Count(string(b), decl) != 1 {
			t.Errorf("%s does not declare contract C%02d once (%q)", f, i+1, decl)
		}
	}
}
