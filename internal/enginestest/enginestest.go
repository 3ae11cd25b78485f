// Package enginestest gives a test its own live Valkey or PostgreSQL (see package engines for how
// one is chosen), stopped when the test ends.
package enginestest

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
)

// startTimeout covers a first-time provisioning (downloads) as well as the start itself.
const startTimeout = 5 * time.Minute

// Valkey starts the canon's Valkey for this test (or uses EMQ_VALKEY_ADDR) and stops it in Cleanup.
func Valkey(tb testing.TB) *engines.Valkey {
	tb.Helper()
	return ValkeyWith(tb, engines.ValkeyOptions{})
}

// ValkeyWith is Valkey with options: server arguments or another kind of server.
func ValkeyWith(tb testing.TB, opt engines.ValkeyOptions) *engines.Valkey {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	v, err := engines.StartValkey(ctx, opt)
	if err != nil {
		tb.Fatalf("start Valkey: %v", err)
	}
	tb.Cleanup(func() {
		if err := v.Stop(); err != nil {
			tb.Errorf("stop Valkey: %v", err)
		}
	})
	return v
}

// ValkeyCluster starts a Valkey Cluster of primaries for this test (or uses EMQ_VALKEY_CLUSTER)
// and stops it in Cleanup. A test that reshards must skip a given cluster (Mode ModeGiven).
func ValkeyCluster(tb testing.TB, primaries int) *engines.ValkeyCluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{Primaries: primaries})
	if err != nil {
		tb.Fatalf("start Valkey Cluster: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stop Valkey Cluster: %v", err)
		}
	})
	return c
}
