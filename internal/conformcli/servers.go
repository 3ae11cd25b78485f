package conformcli

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/runner"
)

// serversFor sets the run's Valkey (or cluster) and the other servers: those given by flag, and
// without a given Valkey, emq-engines' (the checkout's convenience).
func (f flags) serversFor(ctx context.Context, engines *spawner, o *runner.Options, ext Extension) (func(), error) {
	stop := func() {}
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if f.parallel > 1 {
		return f.parallelServers(startCtx, engines, o, ext)
	}
	switch {
	case f.cluster == "start" && f.valkey == "":
		e, err := engines.Start(startCtx, "", "-cluster")
		if err != nil {
			return stop, fmt.Errorf("no Valkey Cluster: %w", err)
		}
		stop, o.Cluster = e.Stop, e.Cluster
		o.Servers[contracts.ServerStandaloneValkey.Name] = contracts.Given(e.Addr) // C01 presents it to the port
	case f.cluster != "":
		if o.Cluster = splitList(f.cluster); len(o.Cluster) == 0 || f.cluster == "start" {
			return stop, fmt.Errorf("-cluster %q names no node", f.cluster)
		}
		o.Valkey = f.valkey // both given: the runner refuses them
	case f.valkey != "":
		o.Valkey = f.valkey
	default:
		e, err := engines.Start(startCtx, "")
		if err != nil {
			return stop, fmt.Errorf("no Valkey: %w", err)
		}
		stop, o.Valkey = e.Stop, e.Addr
	}
	if f.valkey == "" && (f.cluster == "" || f.cluster == "start") {
		for name, start := range engines.Servers() {
			o.Servers[name] = start
		}
	}
	for name, addr := range f.servers {
		if *addr != "" {
			o.Servers[name] = contracts.Given(*addr)
		}
	}
	return stop, nil
}

// defaultLanes is how many lanes a run takes when the kit starts its own Valkeys: ten per core,
// at most 24. Most clauses wait on the server's clock or the port's own timers, not the CPU: on 2
// cores the reference's 198 clauses add up to 92 s, ten of them 4–7.4 s of waiting, and used 6 s
// of CPU; 10 lanes took 12.6 s, 16 took 10.2 s, 20 take 8.9 s. A port whose every session costs
// a runtime's start (the Node port: 30 s of CPU) is bound by the cores instead, and more lanes
// neither help nor hurt it (23.6 s, 21.9 s, 22.7 s). The reports are those of a serial run
// whatever it is.
func defaultLanes() int { return min(24, 10*runtime.NumCPU()) }

// parallelServers sets up a -parallel run: a Valkey per lane (given, or started through
// emq-engines) and a port per lane built from the same flags, and each other server a clause
// needs started once and shared by the lanes (each clause still runs once, so no two clauses use
// one at a time).
func (f flags) parallelServers(ctx context.Context, engines *spawner, o *runner.Options, ext Extension) (func(), error) {
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	if f.cluster != "" {
		return stop, fmt.Errorf("-parallel runs against standalone Valkeys only, not -cluster")
	}
	given := map[string]string{}
	for name, addr := range f.servers {
		if *addr != "" {
			given[name] = *addr
		}
	}
	vks := splitList(f.valkey)
	if f.valkey != "" && len(vks) != f.parallel {
		return stop, fmt.Errorf("-parallel %d needs %d Valkeys: -valkey gives %d (host:port,host:port,…)", f.parallel, f.parallel, len(vks))
	}
	if f.valkey == "" {
		var more []func()
		var err error
		vks, more, err = startAll(ctx, engines, f.parallel, given)
		stops = append(stops, more...)
		if err != nil {
			return stop, err
		}
	}
	o.Parallel = runner.Parallel{Valkeys: vks, Port: func() (drivers.Factory, error) { return f.factory(ext) }}
	for name, addr := range given {
		o.Servers[name] = contracts.Given(addr)
	}
	return stop, nil
}

// startAll starts n Valkeys and, into given, every other server a clause needs that was not
// given, all at once through emq-engines.
func startAll(ctx context.Context, engines *spawner, n int, given map[string]string) ([]string, []func(), error) {
	var jobs []serverKind
	for i := range n {
		jobs = append(jobs, serverKind{Name: "valkey-" + strconv.Itoa(i)})
	}
	for _, s := range serverKinds {
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
