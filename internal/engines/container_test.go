package engines_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/engines/container"
)

// Container mode is exercised for real only where a Docker engine answers; everywhere else a
// forced container mode must fail clearly, not hang or fall back silently.
func TestContainerMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv(engines.EnvMode, "container")
	docker := container.Available(ctx)
	v, verr := engines.StartValkey(ctx, engines.ValkeyOptions{})
	p, perr := engines.StartPostgres(ctx, engines.PostgresOptions{})
	if docker != nil {
		if !errors.Is(docker, container.ErrNoDocker) {
			t.Fatalf("Available: %v does not wrap ErrNoDocker", docker)
		}
		for _, err := range []error{verr, perr} {
			if !errors.Is(err, engines.ErrUnavailable) || !strings.Contains(err.Error(), "Docker") {
				t.Errorf("no Docker: got %v, want ErrUnavailable naming Docker", err)
			}
		}
		t.Logf("no Docker engine here: %v", docker)
		return
	}
	if verr != nil || perr != nil {
		t.Fatalf("with Docker: valkey %v, postgres %v", verr, perr)
	}
	defer v.Stop()
	defer p.Stop()
	if v.Mode != engines.ModeContainer || !strings.HasPrefix(v.Version, "8.1") || v.Server != "valkey" {
		t.Errorf("valkey container: %+v", v)
	}
	if p.Mode != engines.ModeContainer || !strings.HasPrefix(p.Version, "16.") {
		t.Errorf("postgres container: %+v", p)
	}
}
