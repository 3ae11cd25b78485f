package main

import (
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
