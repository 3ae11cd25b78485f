package oban_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/oban"
)

// pgURL is the live PostgreSQL the tests run against.
func pgURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("EMQ_PG_URL")
	if u == "" {
		t.Fatal("EMQ_PG_URL is not set: these tests need a live PostgreSQL 16 (see ENGINES.md)")
	}
	return u
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
