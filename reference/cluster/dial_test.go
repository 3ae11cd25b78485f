package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// Dial fences the deployment (installed once, on the {emq} slot's owner), loads the bundle on
// every primary, and refuses a deployment recording another bundle (EMQVERSION) and a standalone
// server (EMQSERVER).
func TestDialFencesEveryNode(t *testing.T) {
	vc := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := dialRouter(t, vc.Addrs, nil)
	b := r.Bundle()
	if len(r.Primaries()) != 3 {
		t.Fatalf("primaries %v", r.Primaries())
	}
	owner := r.Owner(keys.Slot(keys.Bundle()))
	for _, addr := range vc.Addrs {
		c, err := connector.Dial(ctx, addr, connector.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// the bundle record exists only on its owner
		v, _ := c.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", int(keys.Slot(keys.Bundle())))
		if (v.Int == 1) != (addr == owner) {
			t.Errorf("%s holds %d keys of the {emq} slot; owner %s", addr, v.Int, owner)
		}
		// every script is loaded on every primary
		args := []any{"SCRIPT", "EXISTS"}
		for _, s := range b.Scripts() {
			args = append(args, s.SHA1)
		}
		v, err = c.Do(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range v.Elems {
			if e.Int != 1 {
				t.Errorf("%s lacks script %s", addr, b.Scripts()[i].Name)
			}
		}
		c.Close()
	}

	// Another bundle recorded: every node's connect is refused with EMQVERSION.
	c, err := connector.Dial(ctx, owner, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "HSET", keys.Bundle(), "digest", "0000000000000000000000000000000000000000"); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Dial(ctx, vc.Addrs, cluster.Options{}); !errors.Is(err, emqerr.Version) {
		t.Errorf("dial over another bundle: %v, want EMQVERSION", err)
	}
	if _, err := c.Do(ctx, "HSET", keys.Bundle(), "version", lua.Version, "digest", b.Digest()); err != nil {
		t.Fatal(err)
	}

	// A standalone server is not a cluster node.
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{Args: []string{"--maxclients", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	if _, err := cluster.Dial(ctx, []string{v.Addr}, cluster.Options{}); !errors.Is(err, emqerr.Server) {
		t.Errorf("dial of a standalone server: %v, want EMQSERVER", err)
	}
}
