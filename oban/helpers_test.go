package oban_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/oban"
)

// pgServer is the one live PostgreSQL the package's tests share (EMQ_PG_URL, or one started
// natively by internal/engines); each test isolates itself in its own schema.
var pgServer *engines.Postgres

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	pg, err := engines.StartPostgres(ctx, engines.PostgresOptions{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "oban tests need a live PostgreSQL 16: %v\n", err)
		os.Exit(1)
	}
	pgServer = pg
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop PostgreSQL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func pgURL(t *testing.T) string {
	t.Helper()
	return pgServer.URL
}

// fixture is a pool plus a private schema (Oban prefix), dropped when the test ends, so tests
// can run in parallel against one server.
type fixture struct {
	pool   *pgxpool.Pool
	prefix string
	eng    *oban.Engine
}

func newFixture(t *testing.T, cfg oban.Config) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgURL(t))
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "oban_t_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{prefix}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", prefix, err)
		}
		pool.Close()
	})
	if err := oban.MigratePrefix(ctx, pool, prefix); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	cfg.Prefix = prefix
	eng, err := oban.New(pool, cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return &fixture{pool: pool, prefix: prefix, eng: eng}
}

func (f *fixture) table() string { return pgx.Identifier{f.prefix, "oban_jobs"}.Sanitize() }

// row reads the columns tests assert on.
type row struct {
	State       string
	Attempt     int
	MaxAttempts int
	Errors      int
	ScheduledAt time.Time
	Completed   bool
	Discarded   bool
	Cancelled   bool
}

func (f *fixture) row(t *testing.T, id int64) row {
	t.Helper()
	var r row
	err := f.pool.QueryRow(context.Background(), `SELECT state::text, attempt, max_attempts,
		cardinality(errors), scheduled_at, completed_at IS NOT NULL, discarded_at IS NOT NULL,
		cancelled_at IS NOT NULL FROM `+f.table()+` WHERE id = $1`, id).
		Scan(&r.State, &r.Attempt, &r.MaxAttempts, &r.Errors, &r.ScheduledAt, &r.Completed,
			&r.Discarded, &r.Cancelled)
	if err != nil {
		t.Fatalf("read row %d: %v", id, err)
	}
	return r
}

func (f *fixture) count(t *testing.T, where string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+f.table()+` WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}
