package runner

import (
	"context"
	"fmt"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
)

// Parallel runs a standalone certification on several Valkeys at once, in this process: each
// Valkey is a lane with a port of its own, and every clause still runs on a fresh keyspace, a
// fresh port session and its own MONITOR capture. The reports are those of a run on one Valkey.
type Parallel struct {
	// Valkeys are the lanes' servers, dedicated (every clause FLUSHALLs its lane's); more than
	// one makes the run parallel, and Options.Valkey is then unused.
	Valkeys []string
	// Port builds the port of every lane after the first (which runs Options.Factory): a
	// factory of its own, so that no two lanes share a port's state or a session's recording.
	Port func() (drivers.Factory, error)
}

// parallelServer checks every lane's Valkey and returns the first lane's.
func (o *Options) parallelServer(ctx context.Context) (server, error) {
	if len(o.Cluster) > 0 {
		return server{}, harness("-parallel runs against standalone Valkeys only")
	}
	if o.Parallel.Port == nil {
		return server{}, harness("-parallel %d needs a port per lane (Parallel.Port)", len(o.Parallel.Valkeys))
	}
	var first server
	for i, addr := range o.Parallel.Valkeys {
		vk, err := checkValkey(ctx, addr)
		if err != nil {
			return server{}, harness("no Valkey: %v", err)
		}
		if i == 0 {
			first = vk
		}
	}
	return first, nil
}

// parallel runs the clauses on every lane at once, printing each contract's line once all its
// selected clauses are in.
func (o *Options) parallel(ctx context.Context, bundle *lua.Bundle, vk server, facts report.Facts) (*verdict.Result, error) {
	var lanes []*contracts.Config
	for i, addr := range o.Parallel.Valkeys {
		port := o.Factory
		if i > 0 {
			var err error
			if port, err = o.Parallel.Port(); err != nil {
				return nil, harness("the port of lane %d: %v", i, err)
			}
			defer closeFactory(port)
		}
		cfg, err := o.config(port, bundle, server{Addr: addr})
		if err != nil {
			return nil, err
		}
		lanes = append(lanes, cfg)
	}
	fmt.Fprintf(o.Stdout, "EchoMQ conformance: %s against %s %s, on %d Valkeys at once (bundle %s)\n", facts.Port, vk.Name, vk.Version, len(lanes), lua.Version)
	res, err := contracts.Run(ctx, lanes, o.runOptions(o.Stdout))
	if err != nil {
		return nil, harness("%v", err)
	}
	return res, nil
}
