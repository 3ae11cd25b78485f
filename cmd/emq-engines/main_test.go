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
		s    server
		want string
	}{
		{server{}, engines.EnvValkeyAddr},
		{server{kind: engines.KindRedis}, contracts.ServerWrongKind.Env()},
		{server{kind: engines.KindValkey80}, contracts.ServerOldValkey.Env()},
		{server{clusterNode: true}, contracts.ServerClusterValkey.Env()},
		{server{noHello: true}, contracts.ServerNoHello.Env()},
	} {
		if got := addrVar(c.s); got != c.want {
			t.Errorf("%+v: printed as %s, emq-conform reads %s", c.s, got, c.want)
		}
	}
}
