package engines

import (
	"context"
	"strconv"
)

// ServerStarter starts a throwaway server and returns its address and a stop function: the
// shape of contracts.Config's WrongKind, OldValkey and ClusterValkey.
type ServerStarter = func(ctx context.Context) (addr string, stop func(), err error)

// Starter starts a server with opt each time it is called (for C01's server checks).
func Starter(opt ValkeyOptions) ServerStarter {
	return func(ctx context.Context) (string, func(), error) {
		v, err := StartValkey(ctx, opt)
		if err != nil {
			return "", nil, err
		}
		return v.Addr, func() { v.Stop() }, nil
	}
}

// ClusterStarter starts a Valkey 8.1 with --cluster-enabled yes (HELLO answers mode "cluster"),
// its cluster bus on a free port of its own rather than the default port+10000.
func ClusterStarter() ServerStarter {
	return func(ctx context.Context) (string, func(), error) {
		args, err := ClusterNodeArgs()
		if err != nil {
			return "", nil, err
		}
		return Starter(ValkeyOptions{Args: args})(ctx)
	}
}

// NoHelloArgs are the valkey-server arguments of a Valkey that rejects HELLO (the command renamed
// away): the wrong-kind server that answers everything else as a Valkey 8.1 does.
func NoHelloArgs() []string { return []string{"--rename-command", "HELLO", ""} }

// ClusterNodeArgs are the valkey-server arguments of a lone cluster-enabled node: cluster mode
// on, its cluster bus on a free port of its own rather than the default port+10000.
func ClusterNodeArgs() ([]string, error) {
	bus, err := freePort()
	if err != nil {
		return nil, err
	}
	return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus)}, nil
}
