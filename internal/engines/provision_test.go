package engines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Parallel test binaries serialise first-time provisioning on a flock in the cache.
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v", err)
	}
	unlock()
	unlock2, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

// Without the binaries and without the kit's ci/ scripts, the error says what is missing and
// the command that fixes it.
func TestProvisionMissingNamesTheFix(t *testing.T) {
	cache := t.TempDir()
	t.Chdir(t.TempDir()) // no go.mod of the kit above
	err := ensureProvisioned(context.Background(), cache, filepath.Join(cache, "valkey-x"), "provision-valkey.sh")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"valkey-x", "bash ci/provision-valkey.sh", EnvCache} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "valkey-x")); !os.IsNotExist(err) {
		t.Errorf("prefix created: %v", err)
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "ci", "provision-valkey.sh")); err != nil {
		t.Fatalf("module root %s has no ci/provision-valkey.sh: %v", root, err)
	}
}
