package golden_test

import (
	"strings"
	"testing"

	"github.com/echomq/kit/internal/golden"
)

// TestDiff: a mismatch shows the changed lines and their neighbours, not the whole files.
func TestDiff(t *testing.T) {
	var want, got []string
	for i := range 1000 {
		line := "line " + strings.Repeat("x", i%7)
		want = append(want, line)
		if i == 500 {
			line = "changed"
		}
		got = append(got, line)
	}
	d := golden.Diff("frozen", "fresh", strings.Join(want, "\n")+"\n", strings.Join(got, "\n")+"\n")
	if !strings.Contains(d, "\n-line xxx\n") || !strings.Contains(d, "+changed") || strings.Count(d, "\n") > 12 {
		t.Fatalf("diff of one changed line in 1000:\n%s", d)
	}
	if golden.Diff("a", "b", "same\n", "same\n") != "" {
		t.Fatal("equal texts have a diff")
	}
}
