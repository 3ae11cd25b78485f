package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestLeanDependencies: the runner a port author builds is given addresses and starts no engine;
// nothing of Docker, testcontainers, OpenTelemetry, the kit's engine starter or its mutants is
// linked into it.
func TestLeanDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/testcontainers/", "github.com/docker/", "github.com/moby/", "go.opentelemetry.io/",
		"github.com/echomq/kit/internal/engines",
		"github.com/echomq/kit/internal/mutant", // the self-test machinery is cmd/emq-selftest's
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("emq-conform links %s", pkg)
			}
		}
	}
}

// TestTypeChecksForEveryOS: port teams on macOS and Windows build emq-conform too. What differs
// between operating systems in this source (build constraints, syscall fields) is caught by the
// compiler's type check of the package and every dependency, for each target, from source; a
// full cross-build adds only code generation and costs about 150 s of CPU on a cold build cache,
// which every fresh CI machine has.
func TestTypeChecksForEveryOS(t *testing.T) {
	for _, target := range [][2]string{{"darwin", "arm64"}, {"windows", "amd64"}} {
		cfg := &packages.Config{
			Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax,
			Env:  append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0"),
		}
		pkgs, err := packages.Load(cfg, ".")
		if err != nil {
			t.Fatalf("GOOS=%s GOARCH=%s: load: %v", target[0], target[1], err)
		}
		packages.Visit(pkgs, nil, func(p *packages.Package) {
			for _, e := range p.Errors {
				t.Errorf("GOOS=%s GOARCH=%s: %s", target[0], target[1], e)
			}
		})
		if len(pkgs) != 1 || pkgs[0].Types == nil || !pkgs[0].Types.Complete() {
			t.Errorf("GOOS=%s GOARCH=%s: emq-conform was not type-checked", target[0], target[1])
		}
	}
}
