package main

import (
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/internal/engines"
)

// TestEachServerItsOwnVariable: emq-engines prints every kind of server under the variable that
// emq-conform reads for it.
func TestEachServerItsOwnVariable(t *testing.T) {
	for _, c := range []struct {
		kind        string
		clusterNode bool
		want        string
	}{
		{"", false, engines.EnvValkeyAddr},
		{engines.KindRedis, false, contracts.ServerWrongKind.Env()},
		{engines.KindValkey80, false, contracts.ServerOldValkey.Env()},
		{"", true, contracts.ServerClusterValkey.Env()},
	} {
		if got := addrVar(c.kind, c.clusterNode); got != c.want {
			t.Errorf("kind %q cluster-node %v: printed as %s, emq-conform reads %s", c.kind, c.clusterNode, got, c.want)
		}
	}
}
