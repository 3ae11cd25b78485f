package engines_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/jackc/pgx/v5"
)

func TestPostgresNative(t *testing.T) {
	t.Setenv(engines.EnvPGURL, "")
	t.Setenv(engines.EnvMode, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := engines.StartPostgres(ctx, engines.PostgresOptions{Settings: map[string]string{"synchronous_commit": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if p.Mode != engines.ModeNative || p.Version != engines.PostgresVersion {
		t.Fatalf("got %s %q, want native %s", p.Mode, p.Version, engines.PostgresVersion)
	}
	if !strings.HasPrefix(p.URL, "postgres://postgres@127.0.0.1:") || strings.Contains(p.URL, ":5432/") {
		t.Fatalf("URL %s", p.URL)
	}
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	var full, sc string
	if err := conn.QueryRow(ctx, "SELECT version(), current_setting('synchronous_commit')").Scan(&full, &sc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(full, "PostgreSQL 16.14") || sc != "off" {
		t.Fatalf("version() %q synchronous_commit %q", full, sc)
	}
	// A connection still open must not hold up Stop (fast shutdown): Stop answers nil only when
	// the server ended on its own signal, and an error when it had to be killed after its grace
	// (a smart shutdown would wait for the connection for ever). How long the shutdown took is
	// the machine's, not a bound of this test.
	pid, dir := p.PID(), filepath.Dir(p.LogPath())
	kids := children(pid)
	if len(kids) == 0 {
		t.Fatalf("postmaster %d has no children", pid)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(kids, pid) {
		if alive(k) {
			t.Fatalf("pid %d alive after Stop", k)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s not removed: %v", dir, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestPostgresGiven(t *testing.T) {
	t.Setenv(engines.EnvPGURL, "")
	t.Setenv(engines.EnvMode, "")
	real := enginestest.Postgres(t)
	t.Setenv(engines.EnvPGURL, real.URL)
	p, err := engines.StartPostgres(context.Background(), engines.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != engines.ModeGiven || p.URL != real.URL || p.Version != engines.PostgresVersion || p.PID() != 0 {
		t.Fatalf("given: got %+v", p)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(real.PID()) {
		t.Fatal("Stop of a given server stopped it")
	}
	if _, err := engines.StartPostgres(context.Background(), engines.PostgresOptions{Settings: map[string]string{"bad name": "1"}}); err == nil {
		t.Fatal("bad setting name accepted")
	}
}

// children lists the PIDs whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid(c) == pid {
			out = append(out, c)
		}
	}
	return out
}
