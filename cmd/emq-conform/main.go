// Command emq-conform certifies an EchoMQ port: it runs the fourteen wire contracts (C01–C14)
// against the port and a Valkey 8.1, prints one line per contract, ends with CONFORMANCE n/14
// and writes a certification folder (transcript, JUnit XML, JSON, HTML, facts).
//
//	emq-conform [-port 'CMD'] -valkey ADDR [-wrong-kind ADDR] [-out DIR] [-known-failing FILE]
//	            [-label C09] [-focus REGEXP] [-list] [-mutant NAME] [-deadline 10s]
//	emq-conform -cluster ADDR,ADDR,… [-standalone-valkey ADDR] …   # against a Valkey Cluster
//	emq-conform -cluster start …   # inside the checkout: emq-engines starts a 3-primary cluster
//
// Without -port it certifies the in-process reference bus. It is given its servers by address
// and links no engine code. A clause that needs a server it was not given (C01's wrong-kind
// clause without -wrong-kind) is reported NOT RUN, and the run is then not a certification.
// Inside the kit's checkout, without -valkey (or EMQ_VALKEY_ADDR), it runs cmd/emq-engines as
// a child for a Valkey and, lazily, a Redis 7 of the wrong kind. A given Valkey must be
// dedicated: every clause FLUSHALLs it.
// With -cluster the contracts run against a Valkey Cluster (dedicated too): the port's hello
// says cluster: true and names the first node as its seed; a port that does not declare the
// cluster capability has every clause NOT CLAIMED, and the wire law adds the cluster rules.
// Exit status: 0 certified (or every selected contract passed, or failed only as listed in
// -known-failing), 1 a contract failed or is not claimed or the known-failing list is stale, 2
// the harness could not run (no Valkey, a bad flag).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/subprocess"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// Exit statuses.
const (
	exitCertified = 0
	exitFailed    = 1
	exitHarness   = 2
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	port, valkey, out, knownFile, label, focus, mutant string
	cluster                                            string
	list, admitMutant                                  bool
	admitDir                                           string
	deadline                                           time.Duration
	servers                                            map[string]*string // by contracts.Server name
	seed                                               int64
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("emq-conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := os.Getenv
	fs.StringVar(&o.port, "port", env("EMQ_PORT"), "port command line (split shell-like); empty: the in-process reference bus [EMQ_PORT]")
	fs.StringVar(&o.valkey, "valkey", env("EMQ_VALKEY_ADDR"), "host:port of a dedicated Valkey 8.1 (it is FLUSHALLed); empty, inside the kit's checkout: cmd/emq-engines starts one [EMQ_VALKEY_ADDR]")
	fs.StringVar(&o.cluster, "cluster", env("EMQ_CONFORM_CLUSTER"), "run against a Valkey Cluster: its node addresses, host:port,host:port,… (dedicated: every primary is FLUSHALLed); \"start\", inside the kit's checkout: cmd/emq-engines starts a 3-primary cluster [EMQ_CONFORM_CLUSTER]")
	fs.StringVar(&o.out, "out", env("EMQ_CONFORM_OUT"), "certification folder (default certification/<port>/) [EMQ_CONFORM_OUT]")
	fs.StringVar(&o.knownFile, "known-failing", env("EMQ_KNOWN_FAILING"), "file of contract ids allowed to fail, one per line, # comments [EMQ_KNOWN_FAILING]")
	fs.StringVar(&o.label, "label", env("EMQ_LABEL"), "run only these contracts, e.g. C09 or C09,C10 [EMQ_LABEL]")
	fs.StringVar(&o.focus, "focus", env("EMQ_FOCUS"), "run only clauses whose id matches this regular expression [EMQ_FOCUS]")
	fs.StringVar(&o.mutant, "mutant", env("EMQ_MUTANT"), "run a mutant of the reference (in-process), or pass EMQ_MUTANT to the port [EMQ_MUTANT]")
	fs.BoolVar(&o.list, "list", false, "print the contracts and clauses without running")
	fs.BoolVar(&o.admitMutant, "admit-mutant-scripts", false, "kit self-test: admit the -mutant's edited scripts as bundle scripts (never certifies)")
	fs.StringVar(&o.admitDir, "admit-scripts", "", "kit self-test: admit DIR/<name>.lua (a port's edited scripts) as the bundle's scripts, and their bundle's digest, so only behaviour is judged (never certifies)")
	fs.Int64Var(&o.seed, "seed", 0, "replay the model-checked walks from this seed (a walk failure prints it); 0: the fixed default")
	fs.DurationVar(&o.deadline, "deadline", subprocess.DefaultDeadline, "per-request deadline for a subprocess port")
	o.servers = map[string]*string{}
	for _, s := range contracts.Servers() {
		envName := "EMQ_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_")) + "_ADDR"
		o.servers[s.Name] = fs.String(strings.TrimPrefix(s.Flag, "-"), env(envName), "`ADDR`, "+s.What+"; absent: the clauses that need it are NOT RUN ["+envName+"]")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitCertified
		}
		fmt.Fprintln(stderr, "emq-conform:", err)
		return exitHarness
	}
	if o.list {
		for _, c := range contracts.List() {
			fmt.Fprintf(stdout, "%s\n", c.Contract.Title())
			fmt.Fprintf(stdout, "    %s\n", c.Contract.Rule)
			for _, cl := range c.Clauses {
				fmt.Fprintf(stdout, "  %s\n", cl)
			}
		}
		return exitCertified
	}
	harness := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "emq-conform: HARNESS ERROR: "+format+"\n", a...)
		return exitHarness
	}
	var ropt contracts.RunOptions
	if o.label != "" {
		for _, l := range strings.Split(o.label, ",") {
			id, err := contracts.ParseID(l)
			if err != nil {
				return harness("-label: %v", err)
			}
			ropt.Labels = append(ropt.Labels, id)
		}
	}
	if o.focus != "" {
		ropt.Focus = []string{o.focus}
	}
	if o.knownFile != "" {
		if ropt.KnownFailing, err = readKnownFailing(o.knownFile); err != nil {
			return harness("-known-failing: %v", err)
		}
	}
	bundle, err := lua.Load()
	if err != nil {
		return harness("the script bundle: %v", err)
	}

	ctx := context.Background()
	factory, err := newFactory(o)
	if err != nil {
		return harness("%v", err)
	}
	var vk server
	var nodes []string
	stopValkey := func() {}
	var standalone contracts.Starter // a cluster run's standalone Valkey 8.1, for C01
	if o.cluster != "" {
		if o.valkey != "" {
			return harness("-valkey and -cluster exclude each other: a run is against one server")
		}
		vk, nodes, standalone, stopValkey, err = valkeyCluster(ctx, o.cluster)
		if err != nil {
			return harness("no Valkey Cluster: %v", err)
		}
	} else if vk, stopValkey, err = valkey(ctx, o.valkey); err != nil {
		return harness("no Valkey: %v", err)
	}
	defer stopValkey()

	facts := report.Facts{
		Port: factory.Name(), PortCommand: o.port, KitVersion: contracts.KitVersion,
		Bundle: lua.Version, BundleDigest: bundle.Digest(), ValkeyVersion: vk.Name + " " + vk.Version, Mutant: o.mutant,
		Cluster: len(nodes) > 0,
	}
	if h, err := probe(ctx, factory, protocol.HelloArgs{Valkey: vk.Addr, Cluster: len(nodes) > 0}); err == nil {
		facts.PortRuntime = h.Runtime
		if o.port != "" {
			facts.Port = h.Name
		}
		if len(nodes) > 0 && !slices.Contains(h.Capabilities, protocol.CapCluster) {
			fmt.Fprintf(stderr, "emq-conform: the port does not declare cluster mode (hello capability %q): every clause will be NOT CLAIMED\n", protocol.CapCluster)
		}
	} else if len(nodes) > 0 {
		fmt.Fprintf(stderr, "emq-conform: the port's first hello with cluster: true failed: %v\n"+
			"emq-conform: a port that does not support cluster mode (hello capability %q) has every clause NOT CLAIMED on a cluster\n", err, protocol.CapCluster)
	} else {
		fmt.Fprintf(stderr, "emq-conform: the port's first hello failed (the contracts will say more): %v\n", err)
	}
	out := o.out
	if out == "" {
		out = filepath.Join("certification", report.Label(facts.Port))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return harness("-out: %v", err)
	}

	cfg := &contracts.Config{Factory: factory, Valkey: vk.Addr, Cluster: nodes, Bundle: bundle, Seed: o.seed}
	for _, s := range contracts.Servers() {
		start := contracts.Starter(nil)
		switch {
		case *o.servers[s.Name] != "":
			start = contracts.Given(*o.servers[s.Name])
		case s.Name == contracts.ServerStandaloneValkey.Name && standalone != nil:
			start = standalone // the Valkey emq-engines started beside the cluster
		case o.valkey == "" && (o.cluster == "" || o.cluster == "start"): // the checkout's convenience: emq-engines starts each one
			start = checkoutServers[s.Name]
		}
		if start != nil {
			if err := cfg.SetServer(s.Name, start); err != nil {
				return harness("%v", err)
			}
		}
	}
	if o.admitMutant {
		if o.mutant == "" || o.port != "" {
			return harness("-admit-mutant-scripts needs -mutant and the in-process reference")
		}
		if cfg.Admit, err = mutantScripts(bundle, o.mutant); err != nil {
			return harness("%v", err)
		}
		facts.Mutant += " (edited scripts admitted: not a certification)"
	}
	if o.admitDir != "" {
		if cfg.Admit, cfg.AdmitDigest, err = dirScripts(bundle, o.admitDir); err != nil {
			return harness("-admit-scripts: %v", err)
		}
		facts.Mutant += " (scripts of " + o.admitDir + " admitted: not a certification)"
	}
	// Ginkgo's own reporter writes to standard output; it goes to ginkgo.log instead, and the
	// console gets the contract lines.
	console, restore, err := divertStdout(filepath.Join(out, "ginkgo.log"), stdout)
	if err != nil {
		return harness("%v", err)
	}
	against := vk.Name + " " + vk.Version
	if len(nodes) > 0 {
		against = fmt.Sprintf("a Valkey Cluster (%s %s, %d nodes, seed %s)", vk.Name, vk.Version, len(nodes), vk.Addr)
	}
	fmt.Fprintf(console, "EchoMQ conformance: %s against %s (bundle %s)\n", facts.Port, against, lua.Version)
	ropt.Progress = func(c contracts.ContractResult) { fmt.Fprintln(console, report.Line(c)) }
	res, err := contracts.Run(cfg, ropt)
	restore()
	if err != nil {
		return harness("%v", err)
	}
	if res.Hello != nil {
		facts.PortRuntime = res.Hello.Runtime
	}
	for _, id := range res.Stale {
		fmt.Fprintf(stdout, "known-failing list is stale: %s passed\n", id)
	}
	// What failed, in full, before the verdict line: the rule, expected and got, and the lines
	// exchanged with the port (the last of them; all of them in the reports).
	fmt.Fprint(stdout, report.Failures(res, consoleLines))
	if l := report.SpreadLine(res); l != "" {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout, report.Summary(res))
	path, err := report.Write(out, res, facts)
	if err != nil {
		return harness("writing reports: %v", err)
	}
	html, _ := filepath.Abs(filepath.Join(out, "report.html"))
	fmt.Fprintf(stdout, "reports: %s (transcript %s, badge.svg)\n", out, filepath.Base(path))
	fmt.Fprintf(stdout, "report: %s\n", html)
	return exitCode(res)
}

// consoleLines bounds each exchange, wire trace and stderr tail on the console.
const consoleLines = 24

func exitCode(r *contracts.Result) int {
	// An unfiltered run that left clauses unrun (a server it was not given) certifies nothing.
	failed := len(r.Stale) > 0 || (!r.Filtered && r.ClausesRun < r.ClausesTotal) || (!r.Filtered && r.Spread != nil && !r.Spread.Covered())
	for _, c := range r.Contracts {
		switch c.Status {
		case contracts.StatusHarnessError:
			return exitHarness
		case contracts.StatusFail, contracts.StatusNotClaimed:
			failed = true
		}
	}
	if failed {
		return exitFailed
	}
	// Certified, or every failure was on the known-failing list (the summary still says n/14).
	return exitCertified
}

func readKnownFailing(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		id, err := contracts.ParseID(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, id)
	}
	return out, sc.Err()
}

func newFactory(o options) (drivers.Factory, error) {
	if o.port == "" {
		return referenceFactory(o.mutant)
	}
	var env []string
	if o.mutant != "" {
		env = append(env, "EMQ_MUTANT="+o.mutant)
	}
	return subprocess.New(o.port, subprocess.Options{Env: env, Deadline: o.deadline})
}

// valkey is the given server, checked to be a Valkey, or one emq-engines starts for this run.
func valkey(ctx context.Context, addr string) (server, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stop := func() {}
	if addr == "" {
		e, err := startEngine(ctx, "")
		if err != nil {
			return server{}, nil, err
		}
		addr, stop = e.Addr, e.Stop
	}
	s, err := hello(ctx, addr)
	if err != nil {
		stop()
		return server{}, nil, fmt.Errorf("%s: %w", addr, err)
	}
	if s.Name != "valkey" {
		stop()
		return server{}, nil, fmt.Errorf("%s answers as %q %s, not valkey: the kit certifies against Valkey 8.1", addr, s.Name, s.Version)
	}
	return s, stop, nil
}

// valkeyCluster is the given cluster (node addresses, comma-separated), each node checked to
// be a Valkey in cluster mode, or ("start") a 3-primary one emq-engines starts for this run
// beside a standalone Valkey 8.1, which C01 presents to the port (a port in cluster mode refuses
// it). The seed, server.Addr, is the first node.
func valkeyCluster(ctx context.Context, spec string) (server, []string, contracts.Starter, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stop := func() {}
	var standalone contracts.Starter
	var nodes []string
	if spec == "start" {
		e, err := startEngine(ctx, "", "-cluster")
		if err != nil {
			return server{}, nil, nil, nil, err
		}
		nodes, stop, standalone = e.Cluster, e.Stop, contracts.Given(e.Addr)
	} else {
		for _, a := range strings.Split(spec, ",") {
			if a = strings.TrimSpace(a); a != "" {
				nodes = append(nodes, a)
			}
		}
	}
	if len(nodes) == 0 {
		stop()
		return server{}, nil, nil, nil, fmt.Errorf("-cluster %q names no node", spec)
	}
	var seed server
	for i, addr := range nodes {
		s, err := hello(ctx, addr)
		if err != nil {
			stop()
			return server{}, nil, nil, nil, fmt.Errorf("%s: %w", addr, err)
		}
		if s.Name != "valkey" || s.Mode != "cluster" {
			stop()
			return server{}, nil, nil, nil, fmt.Errorf("%s answers as %q %s in %s mode, not a valkey cluster node", addr, s.Name, s.Version, s.Mode)
		}
		if i == 0 {
			seed = s
		}
	}
	return seed, nodes, standalone, stop, nil
}

// checkoutServers start, through emq-engines, each server a clause may need, when the run was
// given no -valkey (inside the kit's checkout).
var checkoutServers = map[string]contracts.Starter{
	contracts.ServerWrongKind.Name:     engineStarter("redis"),
	contracts.ServerOldValkey.Name:     engineStarter("valkey8.0"),
	contracts.ServerClusterValkey.Name: engineStarter("", "-cluster-node"),
}

// engineStarter starts a server of this kind through emq-engines, once per clause that needs it.
func engineStarter(kind string, extra ...string) contracts.Starter {
	return func(ctx context.Context) (string, func(), error) {
		e, err := startEngine(ctx, kind, extra...)
		if err != nil {
			return "", nil, err
		}
		return e.Addr, e.Stop, nil
	}
}

// probe opens one session to learn the port's name and runtime for the reports.
func probe(ctx context.Context, f drivers.Factory, a protocol.HelloArgs) (protocol.HelloResult, error) {
	d, err := f.Start(ctx)
	if err != nil {
		return protocol.HelloResult{}, err
	}
	h, err := d.Hello(ctx, a)
	if cerr := d.Close(ctx); err == nil {
		err = cerr
	}
	return h, err
}
