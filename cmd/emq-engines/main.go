// Command emq-engines starts a Valkey and a PostgreSQL for development, prints how to reach them
// and stops them on Ctrl-C or SIGTERM.
//
//	eval "$(go run ./cmd/emq-engines | grep ^export)"   # in one shell; keep it running
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/internal/engines"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "emq-engines:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		valkeyOnly   = flag.Bool("valkey-only", false, "start only Valkey")
		postgresOnly = flag.Bool("postgres-only", false, "start only PostgreSQL")
		kind         = flag.String("valkey-kind", "", `Valkey kind: "" or valkey (8.1.1), redis (Redis 7.0), valkey8.0`)
		clusterNode  = flag.Bool("cluster-node", false, "start Valkey as a lone cluster-enabled node (what a port without cluster mode must refuse)")
		noHello      = flag.Bool("no-hello", false, `start Valkey with HELLO renamed away (--rename-command HELLO ""): a server that rejects HELLO, which every port must refuse`)
		vargs, pgset multi
		cluster      = flag.Bool("cluster", false, "also start a 3-primary Valkey Cluster and print its node addresses")
		certify      = flag.Bool("certify", false, "start every server a certification needs — Valkey 8.1, Redis 7, Valkey 8.0, a cluster-enabled Valkey 8.1, a Valkey 8.1 that rejects HELLO — each printed under the variable emq-conform reads for it (implies -valkey-only)")
	)
	flag.Var(&vargs, "valkey-arg", "extra valkey-server argument (repeatable), e.g. -valkey-arg=--appendonly -valkey-arg=yes")
	flag.Var(&pgset, "pg-set", "PostgreSQL setting k=v (repeatable), e.g. -pg-set synchronous_commit=off")
	flag.Parse()
	if *certify {
		*valkeyOnly = true
	}
	if *valkeyOnly && *postgresOnly {
		return errors.New("-valkey-only and -postgres-only exclude each other")
	}
	settings := map[string]string{}
	for _, kv := range pgset {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("-pg-set %q: want k=v", kv)
		}
		settings[k] = v
	}

	// Signals during the start cancel it; the engines started so far are stopped below.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](); err != nil {
				fmt.Fprintln(os.Stderr, "emq-engines: stop:", err)
			}
		}
	}()
	servers := []server{{*kind, *clusterNode, *noHello}}
	if *certify { // every server a certification needs, each under its own variable
		servers = []server{{kind: ""}, {kind: engines.KindRedis}, {kind: engines.KindValkey80}, {clusterNode: true}, {noHello: true}}
	}
	for _, s := range servers {
		if *postgresOnly {
			break
		}
		stop, err := startServer(startCtx, s, vargs)
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	if !*valkeyOnly {
		p, err := engines.StartPostgres(startCtx, engines.PostgresOptions{Settings: settings})
		if err != nil {
			return err
		}
		stops = append(stops, p.Stop)
		fmt.Printf("export %s='%s'\n", engines.EnvPGURL, p.URL)
		fmt.Fprintf(os.Stderr, "# PostgreSQL %s (%s mode)", p.Version, p.Mode)
		if p.PID() != 0 {
			fmt.Fprintf(os.Stderr, ", pid %d, log %s", p.PID(), p.LogPath())
		}
		fmt.Fprintln(os.Stderr)
		psql := "psql"
		if _, err := exec.LookPath("psql"); err != nil {
			psql = "psql (not installed here: apt-get install postgresql-client)"
		}
		fmt.Fprintf(os.Stderr, "#   %s '%s'\n", psql, p.URL)
	}
	if *cluster {
		c, err := engines.StartValkeyCluster(startCtx, engines.ClusterOptions{})
		if err != nil {
			return err
		}
		stops = append(stops, c.Stop)
		fmt.Printf("export %s=%s\n", engines.EnvValkeyCluster, strings.Join(c.Addrs, ","))
		fmt.Fprintf(os.Stderr, "# Valkey Cluster, %d primaries (%s mode), pids %v\n", len(c.Addrs), c.Mode, c.PIDs())
	}
	fmt.Fprintln(os.Stderr, "# running; Ctrl-C or SIGTERM stops them")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "# stopping")
	return nil
}

// server is one kind of server to start.
type server struct {
	kind        string
	clusterNode bool
	noHello     bool
}

// startServer starts one Valkey (or a server of another kind) and prints its export line.
func startServer(ctx context.Context, s server, vargs []string) (func() error, error) {
	args := slices.Clone(vargs)
	if s.clusterNode {
		more, err := engines.ClusterNodeArgs()
		if err != nil {
			return nil, err
		}
		args = append(args, more...)
	}
	if s.noHello {
		args = append(args, engines.NoHelloArgs()...)
	}
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{Kind: s.kind, Args: args})
	if err != nil {
		return nil, err
	}
	fmt.Printf("export %s=%s\n", addrVar(s), v.Addr)
	fmt.Fprintf(os.Stderr, "# %s %s (%s mode)", v.Server, v.Version, v.Mode)
	if v.PID() != 0 {
		fmt.Fprintf(os.Stderr, ", pid %d, log %s", v.PID(), v.LogPath())
	}
	fmt.Fprintln(os.Stderr)
	host, port, _ := strings.Cut(v.Addr, ":")
	fmt.Fprintf(os.Stderr, "#   %s -h %s -p %s\n", valkeyCLI(), host, port)
	return v.Stop, nil
}

// addrVar names the server emq-engines prints, each kind by its own variable — the one
// emq-conform reads for that server (-wrong-kind is EMQ_WRONG_KIND_ADDR, …) — so that
// `eval "$(emq-engines …)"` hands every server to the run it is for.
func addrVar(s server) string {
	switch {
	case s.clusterNode:
		return "EMQ_CLUSTER_NODE_ADDR"
	case s.noHello:
		return "EMQ_NO_HELLO_ADDR"
	case s.kind == engines.KindRedis:
		return "EMQ_WRONG_KIND_ADDR"
	case s.kind == engines.KindValkey80:
		return "EMQ_VALKEY80_ADDR"
	}
	return engines.EnvValkeyAddr
}

// valkeyCLI names the provisioned valkey-cli wrapper, or plain valkey-cli if it is not there.
func valkeyCLI() string {
	prefix, err := engines.ValkeyPrefix()
	if err == nil {
		cli := filepath.Join(prefix, "bin", "valkey-cli")
		if _, err := os.Stat(cli); err == nil {
			return cli
		}
	}
	return "valkey-cli"
}
