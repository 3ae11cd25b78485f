package mutant_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every deliberate defect lives in this package and reaches the reference only through its
// seams (issue 12): no file under reference/ so much as mentions one.
func TestReferenceHoldsNoDefect(t *testing.T) {
	root := filepath.Join("..", "..", "reference")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(strings.ToLower(string(b)), "defect") {
			t.Errorf("%s mentions a defect: mutants belong in internal/mutant", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
