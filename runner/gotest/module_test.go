package gotest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
)

// fenced is the first fenced block after heading in README.md whose text starts with start.
func fenced(t *testing.T, readme, heading, start string) string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README.md has no %q", heading)
	}
	for _, m := range regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(readme[i:], -1) {
		if strings.HasPrefix(m[1], start) {
			return m[1]
		}
	}
	t.Fatalf("README.md has no block starting %q after %q", start, heading)
	return ""
}

// TestSnippetBuildsFromAnotherModule: the README's `go test` snippet, in a module of its own (a
// port's), builds against this kit both ways README gives — the go.mod with its replace line, and
// go work init — with the kit checked out beside it as echomq-kit, as README says. The module
// path github.com/echomq/kit is never fetched (GOPROXY=off): the kit's dependencies come from the
// module cache (a port's go mod tidy fetches them from the proxy), their sums from the kit's
// go.sum. The go.mod's require names this kit's version.
func TestSnippetBuildsFromAnotherModule(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const heading = "### Certify from your own `go test`"
	snippet := fenced(t, readme, heading, "package myport_test")
	gomod := fenced(t, readme, heading, "module example.com/myport")
	work := fenced(t, readme, heading, "go work init")
	if !strings.Contains(gomod, "require github.com/echomq/kit v"+contracts.KitVersion+"\n") {
		t.Errorf("README's go.mod does not require the kit at v%s:\n%s", contracts.KitVersion, gomod)
	}
	kit, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kitSum, err := os.ReadFile(filepath.Join(kit, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, way := range []struct {
		name  string
		files map[string]string
		setup string
	}{
		{"go.mod with replace", map[string]string{"go.mod": gomod, "go.sum": string(kitSum)}, ""},
		{"go work", map[string]string{"go.mod": "module example.com/myport\n\ngo 1.26\n"}, work},
	} {
		t.Run(way.name, func(t *testing.T) {
			dir := t.TempDir()
			way.files["myport_test.go"] = snippet
			for name, text := range way.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(kit, filepath.Join(dir, "echomq-kit")); err != nil {
				t.Fatal(err)
			}
			steps := []string{"go test -c -o /dev/null .", "go vet ."}
			if way.setup != "" {
				steps = append([]string{strings.TrimSpace(way.setup)}, steps...)
			}
			for _, step := range steps {
				cmd := exec.Command("bash", "-c", step)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=")
				if way.setup != "" {
					cmd.Env = append(os.Environ(), "GOPROXY=off") // go work mode: go.work found in dir
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", step, err, out)
				}
			}
		})
	}
}
