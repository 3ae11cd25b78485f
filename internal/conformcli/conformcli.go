// Package conformcli is emq-conform's flag shell: flags and environment to runner.Options (the
// known-failing file, a port's edited scripts), the servers the checkout's emq-engines starts
// when none are given (engines.go, servers.go), and the exit status. The port author's
// cmd/emq-conform is this shell alone; the kit's cmd/emq-selftest adds its self-test flags
// through an Extension, so the port author's binary links none of the mutant machinery.
package conformcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/known"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/drivers/subprocess"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/runner"
)

// Extension adds flags to the shell (the kit's self-test binary).
type Extension interface {
	// Flags registers the extension's flags.
	Flags(fs *flag.FlagSet)
	// Factory builds the port from the parsed flags (the in-process reference when port is
	// ""); nil, nil leaves it to the shell.
	Factory(port string, sub subprocess.Options) (drivers.Factory, error)
	// Adjust changes the run before it starts (admitted scripts, the reports' note).
	Adjust(o *runner.Options, b *lua.Bundle) error
}

// flags are the shell's parsed flags.
type flags struct {
	name                                                          string
	parallel                                                      int
	port, valkey, cluster, out, knownFile, label, focus, admitDir string
	flakyFile, faketime                                           string
	list, version, failFast                                       bool
	first                                                         string
	deadline, startDeadline                                       time.Duration
	servers                                                       map[string]*string // by contracts.Server name
	seed                                                          int64
}

func parse(name string, args []string, stderr io.Writer, ext Extension) (flags, error) {
	f := flags{name: name}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := os.Getenv
	fs.StringVar(&f.port, "port", env("EMQ_PORT"), "port command line (split shell-like); empty: the in-process reference bus [EMQ_PORT]")
	fs.StringVar(&f.valkey, "valkey", env("EMQ_VALKEY_ADDR"), "host:port of a dedicated Valkey 8.1 (it is FLUSHALLed); empty: emq-engines (beside this binary, or in the kit's checkout) starts one [EMQ_VALKEY_ADDR]")
	fs.StringVar(&f.cluster, "cluster", env("EMQ_CONFORM_CLUSTER"), "run against a Valkey Cluster: its node addresses, host:port,host:port,… (dedicated: every primary is FLUSHALLed); \"start\": emq-engines starts a 3-primary cluster [EMQ_CONFORM_CLUSTER]")
	fs.StringVar(&f.out, "out", env("EMQ_CONFORM_OUT"), "certification folder (default certification/<port>/) [EMQ_CONFORM_OUT]")
	fs.StringVar(&f.knownFile, "known-failing", env("EMQ_KNOWN_FAILING"), "`FILE` of clauses known to fail: clause-id patterns, one per line, # comments (C10/dead/*, */*/fields, C04 for all of C04); one that passes, or a pattern that matches nothing, fails the run [EMQ_KNOWN_FAILING]")
	fs.StringVar(&f.flakyFile, "known-flaky", env("EMQ_KNOWN_FLAKY"), "`FILE` of clauses known to fail now and then, as -known-failing: their failures do not fail the run [EMQ_KNOWN_FLAKY]")
	fs.StringVar(&f.label, "label", env("EMQ_LABEL"), "run only these contracts, e.g. C09 or C09,C10 [EMQ_LABEL]")
	fs.StringVar(&f.focus, "focus", env("EMQ_FOCUS"), "run only clauses whose id matches this regular expression [EMQ_FOCUS]")
	fs.BoolVar(&f.failFast, "fail-fast", false, "stop at the first failing clause and report it (a mutation test: a kill needs one failure); never a certification")
	fs.StringVar(&f.first, "first", "", "run the clauses whose id matches this regular expression before the others, the short before the long")
	fs.BoolVar(&f.list, "list", false, "print the contracts and clauses without running")
	fs.BoolVar(&f.version, "version", false, "print the kit's version, the bundle version and its digest")
	fs.StringVar(&f.admitDir, "admit-scripts", "", "admit DIR/<name>.lua (a port's edited copy of lua/) as the bundle's scripts, and their bundle's digest, so that only behaviour is judged (never certifies)")
	fs.Int64Var(&f.seed, "seed", 0, "replay the model-checked walks from this seed (a walk failure prints it); 0: the fixed default")
	fs.IntVar(&f.parallel, "parallel", 0, "run the clauses on N Valkey servers at once (-valkey a,b,… gives N; without -valkey emq-engines starts them): every clause keeps its fresh keyspace, port process and MONITOR capture, and the reports are those of a serial run; 0: as many as -valkey lists, or without -valkey as many as the machine runs well (ten per core, at most 24); a cluster run is serial")
	fs.DurationVar(&f.deadline, "deadline", subprocess.DefaultDeadline, "per-request deadline for a subprocess port")
	fs.DurationVar(&f.startDeadline, "start-deadline", subprocess.DefaultStartDeadline, "deadline of each hello of a subprocess port, which pays its start-up (a port whose first session misses it is a harness error, exit 2)")
	fs.StringVar(&f.faketime, "faketime", env("EMQ_FAKETIME"), "`PATH` of libfaketime's libfaketimeMT.so.1, preloaded into a subprocess port to set its wall clock in C02 lease-lost-across-a-wall-step; empty: where Debian's libfaketime puts it; \"none\": that clause is NOT RUN (not offered) [EMQ_FAKETIME]")
	f.servers = map[string]*string{}
	for _, s := range contracts.Servers() {
		envName := s.Env()
		f.servers[s.Name] = fs.String(strings.TrimPrefix(s.Flag, "-"), env(envName), "`ADDR`, "+s.What+"; absent: the clauses that need it are NOT RUN ["+envName+"]")
	}
	if ext != nil {
		ext.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if f.parallel < 0 {
		return f, fmt.Errorf("-parallel %d: want 0 (the kit chooses) or more", f.parallel)
	}
	if f.parallel == 0 {
		f.parallel = f.defaultParallel()
	}
	return f, nil
}

// defaultParallel is -parallel 0: a cluster run is serial, given Valkeys each take a lane, and
// the servers emq-engines starts are as many as the machine runs well at once.
func (f flags) defaultParallel() int {
	switch {
	case f.cluster != "":
		return 1
	case f.valkey != "":
		return max(1, len(splitList(f.valkey)))
	}
	return defaultLanes()
}

// Main runs the shell named name on args and returns the exit status.
func Main(name string, args []string, stdout, stderr io.Writer, ext Extension) int {
	f, err := parse(name, args, stderr, ext)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return runner.ExitCertified
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return runner.ExitHarness
	}
	if f.list {
		list(stdout)
		return runner.ExitCertified
	}
	if f.version {
		b, err := lua.Load()
		if err != nil {
			fmt.Fprintf(stderr, "%s: HARNESS ERROR: the script bundle: %v\n", name, err)
			return runner.ExitHarness
		}
		fmt.Fprintf(stdout, "%s %s (EchoMQ conformance kit), bundle %s, digest %s\n", name, contracts.KitVersion, lua.Version, b.Digest())
		return runner.ExitCertified
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	engines := &spawner{}
	defer engines.Close()
	o, cleanup, err := f.options(ctx, engines, ext)
	defer cleanup()
	if err == nil {
		o.Stdout, o.Stderr = stdout, stderr
		var out *runner.Outcome
		if out, err = runner.Run(ctx, o); err == nil {
			return out.Exit
		}
	}
	msg := oneLine(err.Error())
	if !runner.IsHarness(err) {
		msg = "HARNESS ERROR: " + msg
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	return runner.ExitHarness
}

// replayCommand is how the replay line names this program so that it runs as printed, from the
// folder it was printed in: the path it was started by (bin/emq-conform, /abs/emq-conform),
// its name when it was found on PATH, and under go run (whose binary is gone once it exits) go
// run of its package when the folder is the kit's checkout.
func replayCommand(name, argv0 string) string {
	switch {
	case !strings.ContainsRune(argv0, os.PathSeparator):
		return name
	case strings.Contains(argv0, string(os.PathSeparator)+"go-build"):
		if _, err := os.Stat(filepath.Join("cmd", name, "main.go")); err == nil {
			return "go run ./cmd/" + name
		}
		return name
	case strings.Trim(argv0, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") != "":
		return "'" + strings.ReplaceAll(argv0, "'", `'\''`) + "'" // a path a shell would split
	}
	return argv0
}

// oneLine is a multi-line error in one line: its first line and, when it quotes more (a port's
// stderr tail), the last line of it.
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	return strings.TrimSpace(lines[0]) + " … " + last
}

// list prints each contract, its rule and its clause ids (a standalone run's), as the table
// declares them.
func list(stdout io.Writer) {
	ids := contracts.Clauses(false)
	for _, c := range contracts.All() {
		fmt.Fprintf(stdout, "%s\n    %s\n", c.Title(), c.Rule)
		for _, id := range ids {
			if strings.HasPrefix(id, c.ID+"/") {
				fmt.Fprintf(stdout, "  %s\n", id)
			}
		}
	}
}

// options turns the flags into a run: the selection, the port, the servers (given, or started
// through emq-engines), the admitted scripts. cleanup stops what it started.
func (f flags) options(ctx context.Context, engines *spawner, ext Extension) (runner.Options, func(), error) {
	cleanup := func() {}
	o := runner.Options{Out: f.out, Seed: f.seed, PortCommand: f.port, Servers: map[string]contracts.Starter{}, Replay: replayCommand(f.name, os.Args[0])}
	for _, l := range splitList(f.label) {
		id, err := contracts.ParseID(l)
		if err != nil {
			return o, cleanup, fmt.Errorf("-label: %w", err)
		}
		o.Labels = append(o.Labels, id)
	}
	if f.focus != "" {
		o.Focus = []string{f.focus}
	}
	o.FailFast = f.failFast
	if f.first != "" {
		re, err := regexp.Compile(f.first)
		if err != nil {
			return o, cleanup, fmt.Errorf("-first: %w", err)
		}
		o.First = re
	}
	// A selection that picks nothing is said before any server starts.
	if _, err := contracts.Select(f.cluster != "", o.Labels, o.Focus); err != nil {
		return o, cleanup, err
	}
	// The known lists are read now too, so that a line that is not a pattern is said at once.
	for _, l := range []struct {
		flag, file string
		to         *[]string
	}{{"-known-failing", f.knownFile, &o.KnownFailing}, {"-known-flaky", f.flakyFile, &o.KnownFlaky}} {
		if l.file == "" {
			continue
		}
		if _, err := known.ReadFile(l.file); err != nil {
			return o, cleanup, fmt.Errorf("%s: %w", l.flag, err)
		}
		*l.to = []string{"@" + l.file}
	}
	var err error
	if o.Factory, err = f.factory(ext); err != nil {
		return o, cleanup, err
	}
	if cleanup, err = f.serversFor(ctx, engines, &o, ext); err != nil {
		return o, cleanup, err
	}
	bundle, err := lua.Load()
	if err != nil {
		return o, cleanup, err
	}
	if f.admitDir != "" {
		if o.SelfTest.Admit, o.SelfTest.Digest, err = AdmitScripts(bundle, f.admitDir); err != nil {
			return o, cleanup, fmt.Errorf("-admit-scripts: %w", err)
		}
		o.SelfTest.Note = "scripts of " + f.admitDir + " admitted: not a certification"
	}
	if ext != nil {
		err = ext.Adjust(&o, bundle)
	}
	return o, cleanup, err
}

// factory is the port: the extension's, a subprocess, or the in-process reference.
func (f flags) factory(ext Extension) (drivers.Factory, error) {
	ft, err := findFaketime(f.faketime)
	if err != nil {
		return nil, err
	}
	sub := subprocess.Options{Deadline: f.deadline, StartDeadline: f.startDeadline, Prestart: true, Faketime: ft}
	if ext != nil {
		if fc, err := ext.Factory(f.port, sub); fc != nil || err != nil {
			return fc, err
		}
	}
	if f.port == "" {
		return inproc.New(inproc.Options{})
	}
	return subprocess.New(f.port, sub)
}
