package contracts

import (
	"context"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/verdict"
)

// Server is a server some clause needs besides the Valkey 8.1 under test. The runner offers one
// flag per server (Flag, given an address); a clause that finds its server absent is NOT RUN.
type Server struct {
	Name string // "wrong-kind"
	Flag string // the runner's flag, "-wrong-kind"
	What string // what to give, for the NOT RUN message and the flag's help
}

// Env is the environment variable that gives the server's address, as the flag does:
// EMQ_WRONG_KIND_ADDR for wrong-kind (emq-engines prints each server under its own).
func (s Server) Env() string {
	return "EMQ_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_")) + "_ADDR"
}

// ServerWrongKind is the wrong-kind server of C01's refusal clause (A12).
var ServerWrongKind = Server{
	Name: "wrong-kind",
	Flag: "-wrong-kind",
	What: "host:port of a server that is not Valkey ≥ 8.1, e.g. a Redis 7 (ci/provision-redis.sh unpacks one without root; make conform starts one)",
}

// ServerOldValkey is a real Valkey older than the canon admits, for C01 (A12: version ≥ 8.1.0).
var ServerOldValkey = Server{
	Name: "valkey80",
	Flag: "-valkey80",
	What: "host:port of a Valkey 8.0 (ci/provision-valkey80.sh unpacks 8.0.1; make conform starts one)",
}

// ServerClusterValkey is a Valkey 8.1 started with cluster-enabled yes, for C01 (A12: a port that
// has not declared cluster mode refuses it).
var ServerClusterValkey = Server{
	Name: "cluster-node",
	Flag: "-cluster-node",
	What: "host:port of a Valkey 8.1 started with --cluster-enabled yes (make conform starts one)",
}

// ServerNoHello is a Valkey 8.1 that rejects HELLO (started with --rename-command HELLO ""), for
// C01 (A12, canon §5.1: a server that rejects HELLO is refused with EMQSERVER).
var ServerNoHello = Server{
	Name: "no-hello",
	Flag: "-no-hello",
	What: `host:port of a Valkey 8.1 started with --rename-command HELLO "" (a server that rejects HELLO; make conform starts one)`,
}

// ServerStandaloneValkey is a standalone Valkey 8.1 for a cluster run's C01: a port in cluster
// mode refuses it (EMQSERVER).
var ServerStandaloneValkey = Server{
	Name: "standalone-valkey",
	Flag: "-standalone-valkey",
	What: "host:port of a standalone Valkey 8.1, for a cluster run (make conform CLUSTER=1 starts one)",
}

// Servers lists the servers clauses may need, for the runner's flags. Adding a server: declare
// it here, give Config a starter for it, wire it in SetServer, and call t.needServer in the
// clause.
func Servers() []Server {
	return []Server{ServerWrongKind, ServerOldValkey, ServerClusterValkey, ServerNoHello, ServerStandaloneValkey}
}

// Starter starts (or hands out) a server and returns its address and a stop function.
type Starter func(ctx context.Context) (addr string, stop func(), err error)

// Given is a Starter for a server that already runs at addr; stopping it does nothing.
func Given(addr string) Starter {
	return func(context.Context) (string, func(), error) { return addr, func() {}, nil }
}

// SetServer wires a server given by address into the configuration.
func (c *Config) SetServer(name string, start Starter) error {
	switch name {
	case ServerWrongKind.Name:
		c.WrongKind = start
	case ServerOldValkey.Name:
		c.OldValkey = start
	case ServerClusterValkey.Name:
		c.ClusterValkey = start
	case ServerNoHello.Name:
		c.NoHello = start
	case ServerStandaloneValkey.Name:
		c.StandaloneValkey = start
	default:
		return fmt.Errorf("contracts: no clause needs a server named %q", name)
	}
	return nil
}

// needServer starts the server s for the clause (stopped when the clause ends), or ends the
// clause NOT RUN, saying how to provide it, when the run has none.
func (t *T) needServer(s Server, start Starter) string {
	if start == nil {
		// NOT RUN, never a pass: its contract is not counted as passed.
		t.skip(verdict.StatusNotRun, fmt.Sprintf("this clause needs a %s server; give one with %s ADDR (or %s), the %s", s.Name, s.Flag, s.Env(), s.What))
	}
	addr, stop, err := start(t.ctx)
	if err != nil {
		t.harness("start the %s server: %v", s.Name, err)
	}
	t.stops = append(t.stops, stop)
	return addr
}
