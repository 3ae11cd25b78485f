// Package golden compares a fresh output with its frozen file, or rewrites the file under the
// tests' -update flag. A mismatch prints a unified diff of the changed lines and a few around
// them (through github.com/aymanbagabas/go-udiff, a maintained port of the Go tools' own diff),
// never the two files whole.
package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"
)

// context is how many unchanged lines surround each change in a mismatch's diff.
const context = 2

// Check compares fresh with the file at path, or (update) rewrites the file with it. what says
// how to regenerate it ("make transcripts").
func Check(t testing.TB, path, fresh string, update bool, regenerate string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s creates it)", err, regenerate)
	}
	if d := Diff(path, "a fresh run", string(want), fresh); d != "" {
		t.Errorf("a fresh run differs from %s (%s if the change is intended):\n%s", path, regenerate, d)
	}
}

// Diff is the unified diff from want to got ("" when they are equal).
func Diff(wantLabel, gotLabel, want, got string) string {
	if want == got {
		return ""
	}
	d, err := udiff.ToUnified(wantLabel, gotLabel, want, udiff.Lines(want, got), context)
	if err != nil {
		return "(no diff: " + err.Error() + ")"
	}
	return strings.TrimRight(d, "\n")
}
