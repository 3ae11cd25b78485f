package enginestest

import (
	"context"
	"testing"

	"github.com/echomq/kit/internal/engines"
)

// Postgres starts PostgreSQL 16 for this test (or uses EMQ_PG_URL) and stops it in Cleanup.
func Postgres(tb testing.TB) *engines.Postgres {
	tb.Helper()
	return PostgresWith(tb, engines.PostgresOptions{})
}

// PostgresWith is Postgres with server settings.
func PostgresWith(tb testing.TB, opt engines.PostgresOptions) *engines.Postgres {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := engines.StartPostgres(ctx, opt)
	if err != nil {
		tb.Fatalf("start PostgreSQL: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return p
}
