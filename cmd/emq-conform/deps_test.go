package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
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

// TestBuildsForEveryOS: port teams on macOS and Windows build emq-conform too.
func TestBuildsForEveryOS(t *testing.T) {
	for _, target := range [][2]string{{"darwin", "arm64"}, {"windows", "amd64"}} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
		cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build: %v\n%s", target[0], target[1], err, out)
		}
	}
}
