package conformcli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/runner"
)

// parallelServers sets up a -parallel run: a Valkey per worker (given, or started through
// emq-engines), and each other server a clause needs started once and handed to every worker by
// address (each clause still runs once, so no two clauses share one at a time). The workers are
// this program again, with the flags it was given and a worker's own.
func (f flags) parallelServers(ctx context.Context, engines *runner.Engines, o *runner.Options) (func(), error) {
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	if f.cluster != "" {
		return stop, fmt.Errorf("-parallel runs against standalone Valkeys only, not -cluster")
	}
	o.Parallel = f.parallel
	given := map[string]string{}
	for name, addr := range f.servers {
		if *addr != "" {
			given[name] = *addr
		}
	}
	if f.valkey != "" {
		if o.Valkeys = runner.SplitList(f.valkey); len(o.Valkeys) != f.parallel {
			return stop, fmt.Errorf("-parallel %d needs %d Valkeys: -valkey gives %d (host:port,host:port,…)", f.parallel, f.parallel, len(o.Valkeys))
		}
	} else {
		vks, more, err := startAll(ctx, engines, f.parallel, given)
		stops = append(stops, more...)
		if err != nil {
			return stop, err
		}
		o.Valkeys = vks
	}
	o.Valkey = o.Valkeys[0]
	for name, addr := range given {
		o.Servers[name] = contracts.Given(addr)
	}
	self, err := os.Executable()
	if err != nil {
		return stop, err
	}
	o.Worker = func(ctx context.Context, valkey, claims string) *exec.Cmd {
		args := append(append([]string(nil), f.args...), "-parallel", "1", "-valkey", valkey, "-worker", claims)
		for name, addr := range given {
			args = append(args, serverFlag(name), addr)
		}
		return exec.CommandContext(ctx, self, args...)
	}
	return stop, nil
}

// startAll starts n Valkeys and, into given, every other server a clause needs that was not
// given, all at once through emq-engines.
func startAll(ctx context.Context, engines *runner.Engines, n int, given map[string]string) ([]string, []func(), error) {
	var jobs []runner.ServerKind
	for i := range n {
		jobs = append(jobs, runner.ServerKind{Name: "valkey-" + strconv.Itoa(i)})
	}
	for _, s := range runner.ServerKinds {
		if given[s.Name] == "" {
			jobs = append(jobs, s)
		}
	}
	addrs, stops, errs := make([]string, len(jobs)), make([]func(), len(jobs)), make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := engines.Start(ctx, j.Kind, j.Extra...)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", j.Name, err)
				return
			}
			addrs[i], stops[i] = e.Addr, e.Stop
		}()
	}
	wg.Wait()
	var live []func()
	for _, s := range stops {
		if s != nil {
			live = append(live, s)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, live, err
		}
	}
	for i, j := range jobs[n:] {
		given[j.Name] = addrs[n+i]
	}
	return addrs[:n], live, nil
}

// serverFlag is the flag that gives server name ("-wrong-kind").
func serverFlag(name string) string {
	for _, s := range contracts.Servers() {
		if s.Name == name {
			return s.Flag
		}
	}
	return "-" + strings.TrimPrefix(name, "-")
}
