package engines_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
)

func TestValkeyNative(t *testing.T) {
	t.Setenv(engines.EnvValkeyAddr, "")
	t.Setenv(engines.EnvMode, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	if v.Mode != engines.ModeNative || v.Server != "valkey" || v.Version != engines.ValkeyVersion {
		t.Fatalf("got mode %q server %q version %q, want native valkey %s", v.Mode, v.Server, v.Version, engines.ValkeyVersion)
	}
	if strings.HasSuffix(v.Addr, ":6379") || !strings.HasPrefix(v.Addr, "127.0.0.1:") {
		t.Fatalf("addr %s: want a loopback port other than 6379", v.Addr)
	}
	if got := infoField(t, v.Addr, "server_name"); got != "valkey" {
		t.Fatalf("server_name %q", got)
	}
	pid, log := v.PID(), v.LogPath()
	if pid == 0 || !alive(pid) {
		t.Fatalf("pid %d not alive", pid)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("log: %v", err)
	}
	if err := v.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("pid %d still alive after Stop", pid)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Fatalf("temp dir not removed: %v", err)
	}
	if err := v.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestValkeyArgs(t *testing.T) {
	t.Setenv(engines.EnvMode, "")
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	if v.Mode != engines.ModeNative {
		t.Fatalf("mode %s: Args must start a server", v.Mode)
	}
	if got := configGet(t, v.Addr, "appendfsync"); got != "always" {
		t.Fatalf("appendfsync %q, want always", got)
	}
}

func TestValkeyGiven(t *testing.T) {
	t.Setenv(engines.EnvValkeyAddr, "")
	t.Setenv(engines.EnvMode, "")
	real := enginestest.Valkey(t)
	t.Setenv(engines.EnvValkeyAddr, real.Addr)
	t.Setenv(engines.EnvMode, "given")
	ctx := context.Background()
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Mode != engines.ModeGiven || v.Addr != real.Addr || v.Version != engines.ValkeyVersion || v.PID() != 0 {
		t.Fatalf("given: got %+v", v)
	}
	if err := v.Stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(real.PID()) {
		t.Fatal("Stop of a given server stopped it")
	}
	// A server of another kind is never the given one.
	r, err := engines.StartValkey(ctx, engines.ValkeyOptions{Kind: engines.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if r.Mode != engines.ModeNative || r.Addr == real.Addr {
		t.Fatalf("redis kind with a given address: got %s at %s", r.Mode, r.Addr)
	}
	// A given address that does not answer is a clear error.
	t.Setenv(engines.EnvValkeyAddr, "127.0.0.1:1")
	if _, err := engines.StartValkey(ctx, engines.ValkeyOptions{}); err == nil || !strings.Contains(err.Error(), engines.EnvValkeyAddr) {
		t.Fatalf("unreachable given address: err %v", err)
	}
}

func TestRedisWrongKind(t *testing.T) {
	t.Setenv(engines.EnvMode, "")
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Kind: engines.KindRedis})
	if v.Server != "redis" || !strings.HasPrefix(v.Version, "7.") {
		t.Fatalf("got %s %s, want redis 7.x", v.Server, v.Version)
	}
	if got := infoField(t, v.Addr, "redis_version"); !strings.HasPrefix(got, "7.") {
		t.Fatalf("redis_version %q", got)
	}
	if got := infoField(t, v.Addr, "server_name"); got != "" {
		t.Fatalf("server_name %q: Redis 7.0 has none", got)
	}
}

func TestBadInput(t *testing.T) {
	t.Setenv(engines.EnvMode, "bogus")
	if _, err := engines.StartValkey(context.Background(), engines.ValkeyOptions{}); err == nil || !strings.Contains(err.Error(), engines.EnvMode) {
		t.Fatalf("bad %s: err %v", engines.EnvMode, err)
	}
	t.Setenv(engines.EnvMode, "")
	if _, err := engines.StartValkey(context.Background(), engines.ValkeyOptions{Kind: "keydb"}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestValkey80TooOld(t *testing.T) {
	t.Setenv(engines.EnvMode, "")
	v := enginestest.ValkeyWith(t, engines.ValkeyOptions{Kind: engines.KindValkey80})
	if v.Server != "valkey" || !strings.HasPrefix(v.Version, "8.0.") {
		t.Fatalf("got %s %s, want valkey 8.0.x", v.Server, v.Version)
	}
	if got := infoField(t, v.Addr, "valkey_version"); got != v.Version {
		t.Fatalf("valkey_version %q, reported %q", got, v.Version)
	}
}

// A given server that answers but refuses to say more (AUTH required) is still used as given.
func TestValkeyGivenWithAuth(t *testing.T) {
	t.Setenv(engines.EnvMode, "")
	real := enginestest.ValkeyWith(t, engines.ValkeyOptions{Args: []string{"--requirepass", "s3cret"}})
	if real.Version != engines.ValkeyVersion { // we started it, so we know the password
		t.Fatalf("native with requirepass: version %q", real.Version)
	}
	t.Setenv(engines.EnvValkeyAddr, real.Addr)
	v, err := engines.StartValkey(context.Background(), engines.ValkeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Mode != engines.ModeGiven || v.Addr != real.Addr || v.Version != "" {
		t.Fatalf("got %+v", v)
	}
}

func TestForcedModes(t *testing.T) {
	ctx := context.Background()
	t.Setenv(engines.EnvMode, "given")
	t.Setenv(engines.EnvValkeyAddr, "")
	t.Setenv(engines.EnvPGURL, "")
	if _, err := engines.StartValkey(ctx, engines.ValkeyOptions{}); !errors.Is(err, engines.ErrUnavailable) || !strings.Contains(err.Error(), engines.EnvValkeyAddr) {
		t.Errorf("given without %s: %v", engines.EnvValkeyAddr, err)
	}
	if _, err := engines.StartPostgres(ctx, engines.PostgresOptions{}); !errors.Is(err, engines.ErrUnavailable) || !strings.Contains(err.Error(), engines.EnvPGURL) {
		t.Errorf("given without %s: %v", engines.EnvPGURL, err)
	}
	// native wins over an address in the environment when forced.
	t.Setenv(engines.EnvMode, "native")
	t.Setenv(engines.EnvValkeyAddr, "127.0.0.1:1")
	v := enginestest.Valkey(t)
	if v.Mode != engines.ModeNative || v.Addr == "127.0.0.1:1" {
		t.Fatalf("forced native: %s at %s", v.Mode, v.Addr)
	}
}

// A server that cannot start says why: the error carries its log's tail, and nothing is left behind.
func TestStartFailureShowsLog(t *testing.T) {
	t.Setenv(engines.EnvMode, "")
	ctx := context.Background()
	_, err := engines.StartValkey(ctx, engines.ValkeyOptions{Args: []string{"--no-such-directive", "1"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-directive") || !strings.Contains(err.Error(), "log") {
		t.Errorf("valkey with a bad argument: %v", err)
	}
	_, err = engines.StartPostgres(ctx, engines.PostgresOptions{Settings: map[string]string{"no_such_setting": "1"}})
	if err == nil || !strings.Contains(err.Error(), `unrecognized configuration parameter "no_such_setting"`) {
		t.Errorf("postgres with a bad setting: %v", err)
	}
}
