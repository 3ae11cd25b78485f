package mutation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/contracts"
)

// Options are a run's.
type Options struct {
	Root  string   // the kit's checkout
	Out   string   // the output folder (out/mutation)
	Ports []string // the ports to mutate (Ports when empty)
	// Sample mutants per port (all when ≤ 0), drawn with Seed.
	Sample int
	Seed   uint64
	// Workers is how many certifications run at once, each on its own server set.
	Workers int
	// Stryker is the folder ci/provision-stryker.sh provisions; Gremlins the gremlins binary
	// ci/provision-gremlins.sh installs.
	Stryker, Gremlins string
	// Triage is the committed triage file.
	Triage string
	// ByContract profiles each contract, not each clause (see Profiling): 14 runs instead of
	// 150, for a smoke run.
	ByContract bool
	// Partial and Deadline: see Plan.
	Partial bool
	// Cluster starts a 3-primary cluster beside each server set, for the cluster stage of the
	// ports that have a cluster mode (Plan.Cluster).
	Cluster  bool
	Deadline time.Duration
	// Self is this program (the hooks are it, under another name or subcommand).
	Self   string
	Stdout io.Writer
	// digest names the checkout's state: the profiles are kept under Out/profile by it.
	digest string
}

// Result is one port's outcome.
type Result struct {
	Port     string
	Mutants  int // every mutant the tool made
	Sample   []Mutant
	Verdicts map[string]Verdict // by mutant id
	Took     time.Duration
}

// Run runs the ports' mutants and writes the output folder. It returns every port's result;
// an error is a run that could not be made (a port's results are then absent).
func Run(ctx context.Context, o Options) ([]Result, error) {
	if len(o.Ports) == 0 {
		o.Ports = Ports
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	run := filepath.Join(o.Out, "run")
	if err := os.RemoveAll(run); err != nil {
		return nil, err
	}
	var err error
	if o.digest, err = Digest(ctx, o.Root); err != nil {
		return nil, err
	}
	for _, d := range []string{"bin", "locks", "shim"} {
		if err := os.MkdirAll(filepath.Join(run, d), 0o755); err != nil {
			return nil, err
		}
	}
	base, stop, err := o.prepare(ctx, run)
	defer stop()
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, port := range o.Ports {
		start := time.Now()
		p := *base
		p.Dir = filepath.Join(run, port)
		if err := os.MkdirAll(p.Dir, 0o755); err != nil {
			return results, err
		}
		fmt.Fprintf(o.Stdout, "== %s\n", port)
		var r Result
		switch port {
		case PortNode:
			r, err = o.node(ctx, &p)
		case PortReference:
			r, err = o.reference(ctx, &p)
		case PortBundle:
			r, err = o.bundle(ctx, &p)
		default:
			err = fmt.Errorf("no port %q (have %v)", port, Ports)
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", port, err)
		}
		if r.Verdicts, err = p.Verdicts(port); err != nil {
			return results, err
		}
		r.Port, r.Took = port, time.Since(start)
		results = append(results, r)
		fmt.Fprintf(o.Stdout, "%s: %d mutants made, %d sampled, %s\n", port, r.Mutants, len(r.Sample), r.Took.Round(time.Second))
	}
	return results, nil
}

// prepare builds the judge from the checkout, starts the server sets and writes the shim: the
// plan every port's plan starts from. stop stops the servers.
func (o Options) prepare(ctx context.Context, run string) (*Plan, func(), error) {
	stop := func() {}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, stop, err
	}
	bin := filepath.Join(run, "bin")
	// The pristine emq-port is built as the shim builds a mutant's (-trimpath), which also
	// warms the build cache the shim's builds in gremlins' copies of the module share.
	for _, b := range [][]string{{"build", "-o", bin + "/", "./cmd/emq-selftest", "./cmd/emq-engines"}, {"build", "-trimpath", "-o", bin + "/", "./cmd/emq-port"}} {
		build := exec.CommandContext(ctx, goBin, b...)
		build.Dir = o.Root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, stop, fmt.Errorf("go %s: %v: %s", strings.Join(b, " "), err, out)
		}
	}
	if err := os.Symlink(o.Self, filepath.Join(run, "shim", "go")); err != nil {
		return nil, stop, err
	}
	judge := filepath.Join(bin, "emq-selftest")
	help, _ := exec.CommandContext(ctx, judge, "-h").CombinedOutput()
	sets, err := startSets(ctx, filepath.Join(bin, "emq-engines"), o.Workers, o.Cluster, o.Stdout)
	if err != nil {
		return nil, stop, err
	}
	stop = func() { stopSets(sets) }
	p := &Plan{Root: o.Root, Judge: judge, Locks: filepath.Join(run, "locks"), Clauses: contracts.Clauses(false),
		FailFast: strings.Contains(string(help), "-fail-fast") && strings.Contains(string(help), "-first"),
		Partial:  o.Partial, Deadline: o.Deadline, Go: goBin}
	for _, s := range sets {
		p.Pool = append(p.Pool, s.set)
	}
	if !p.FailFast {
		fmt.Fprintln(o.Stdout, "the judge has no -fail-fast/-first: a mutant's covering clauses run alone first (-focus), the others after for a survivor")
	}
	return p, stop, nil
}

// sample gives every mutant a tool made its covering clauses (from the profile's runs and
// their coverage), draws the run's sample, sets it in the plan, and records at once the verdict
// of each sampled mutant no clause executes.
func (o Options) sample(p *Plan, all []Mutant, runs []ClauseRun, cov Coverage) ([]Mutant, error) {
	cover(all, runs, cov)
	s := Sample(all, o.Sample, o.Seed)
	p.Mutants = map[string]Mutant{}
	for _, m := range s {
		p.Mutants[m.ID] = m
		if !m.Covered && !p.Cluster { // with a cluster stage, Certify judges it
			if err := p.record(m.Port, Verdict{ID: m.ID, Status: NoCoverage, Detail: "no clause of a certification executes it"}); err != nil {
				return nil, err
			}
		}
	}
	return s, p.write()
}

// node runs StrykerJS over the Node port.
func (o Options) node(ctx context.Context, p *Plan) (Result, error) {
	if o.Stryker == "" {
		return Result{}, errors.New("no StrykerJS: give its folder (bash ci/provision-stryker.sh prints it)")
	}
	p.Pristine = Subject{Args: []string{"-port", "node " + shellQuote(filepath.Join(o.Root, "ports/node/port.js"))}}
	project := filepath.Join(p.Dir, "project")
	if err := nodeProject(o.Root, project); err != nil {
		return Result{}, err
	}
	log, err := os.Create(filepath.Join(p.Dir, "stryker.log"))
	if err != nil {
		return Result{}, err
	}
	defer log.Close()
	hook := shellQuote(o.Self) + " hook-node"
	timeout := (p.Deadline + time.Minute).Milliseconds()
	// The listing: every test run answers at once.
	listing := filepath.Join(p.Dir, "listing.json")
	if err := runStryker(ctx, o.Stryker, project, p.Dir, strykerConfig("true", listing, "", o.Workers, timeout), log); err != nil {
		return Result{}, err
	}
	report, files, err := readStryker(listing)
	if err != nil {
		return Result{}, err
	}
	all, err := nodeMutants(files)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Stdout, "node: StrykerJS made %d mutants; profiling the pristine port\n", len(all))
	runs, err := p.Profiled(ctx, Profiling{
		Subject:    p.Pristine,
		Env:        func(dir string) []string { return []string{"NODE_V8_COVERAGE=" + dir} },
		ByContract: o.ByContract,
	}, o.profileDir(PortNode), o.Workers)
	if err != nil {
		return Result{}, err
	}
	cov, err := readV8Coverage(o.Root, runs)
	if err != nil {
		return Result{}, err
	}
	s, err := o.sample(p, all, runs, cov)
	if err != nil {
		return Result{}, err
	}
	inc := filepath.Join(p.Dir, "incremental.json")
	if err := incremental(report, files, p.Mutants, o.Seed, o.Sample, inc); err != nil {
		return Result{}, err
	}
	final := filepath.Join(p.Dir, "stryker.json")
	if err := runStryker(ctx, o.Stryker, project, p.Dir, strykerConfig(hook, final, inc, o.Workers, timeout), log); err != nil {
		return Result{}, err
	}
	if _, files, err = readStryker(final); err != nil {
		return Result{}, err
	}
	return Result{Mutants: len(all), Sample: s}, checkIDs(files, p.Mutants)
}

// reference runs gremlins over the Go reference as emq-port.
func (o Options) reference(ctx context.Context, p *Plan) (Result, error) {
	if o.Gremlins == "" {
		return Result{}, errors.New("no gremlins: give its binary (bash ci/provision-gremlins.sh prints it)")
	}
	p.Pristine = Subject{Args: []string{"-port", shellQuote(filepath.Join(filepath.Dir(p.Dir), "bin", "emq-port"))}}
	p.Cluster = o.Cluster // emq-port has the reference's cluster mode
	snap := filepath.Join(p.Dir, "module")
	pkgs, err := snapshot(ctx, p.Go, o.Root, snap)
	if err != nil {
		return Result{}, err
	}
	if p.Targets, err = targetSums(snap); err != nil {
		return Result{}, err
	}
	log, err := os.Create(filepath.Join(p.Dir, "gremlins.log"))
	if err != nil {
		return Result{}, err
	}
	defer log.Close()
	shim := filepath.Join(filepath.Dir(p.Dir), "shim")
	if err := p.write(); err != nil {
		return Result{}, err
	}
	listing := filepath.Join(p.Dir, "listing.json")
	if err := runGremlins(ctx, o.Gremlins, snap, shim, p.Dir, gremlinsArgs(pkgs, "--dry-run", "--workers", "1", "-o", listing), log); err != nil {
		return Result{}, err
	}
	all, err := goMutants(listing, snap)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Stdout, "reference: gremlins made %d mutants; profiling the pristine port\n", len(all))
	runs, module, err := o.goProfile(ctx, p)
	if err != nil {
		return Result{}, err
	}
	blocks, err := readGoCoverage(ctx, p.Go, module, runs)
	if err != nil {
		return Result{}, err
	}
	cov := goCases{goCoverage: blocks, root: o.Root, files: map[string]*goFile{}}
	s, err := o.sample(p, all, runs, cov)
	if err != nil {
		return Result{}, err
	}
	if err := p.markUnbuildable(ctx, snap, s); err != nil {
		return Result{}, err
	}
	p.Profile = selectionProfile(module, s, p.Cluster)
	if err := p.write(); err != nil {
		return Result{}, err
	}
	// Gremlins bounds a mutant by its coverage run's time (here the shim's instant answer)
	// times this coefficient; the certification's own deadline is the plan's.
	args := gremlinsArgs(pkgs, "--workers", fmt.Sprint(o.Workers), "--timeout-coefficient", "1000000", "-o", filepath.Join(p.Dir, "gremlins.json"))
	if err := runGremlins(ctx, o.Gremlins, snap, shim, p.Dir, args, log); err != nil {
		return Result{}, err
	}
	return Result{Mutants: len(all), Sample: s}, nil
}

// goProfile runs the clauses against an emq-port built with coverage of the targets, watching
// the scripts each runs (the bundle's profile reads them back: saveScripts).
func (o Options) goProfile(ctx context.Context, p *Plan) ([]ClauseRun, string, error) {
	mod, err := exec.CommandContext(ctx, p.Go, "list", "-m").Output()
	if err != nil {
		return nil, "", err
	}
	module := strings.TrimSpace(string(mod))
	var pkgs []string
	for _, t := range goTargets {
		pkgs = append(pkgs, module+"/"+t)
	}
	bin := filepath.Join(p.Dir, "emq-port-cover")
	build := exec.CommandContext(ctx, p.Go, "build", "-cover", "-coverpkg="+strings.Join(pkgs, ","), "-o", bin, "./cmd/emq-port")
	build.Dir = o.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("go build -cover: %v: %s", err, out)
	}
	runs, err := p.Profiled(ctx, Profiling{
		Subject:    Subject{Args: []string{"-port", shellQuote(bin)}},
		Env:        func(dir string) []string { return []string{"GOCOVERDIR=" + dir} },
		Monitor:    true,
		ByContract: o.ByContract,
	}, o.profileDir(PortReference), o.Workers)
	return runs, module, err
}

// bundle runs this package's Lua operators through the in-process reference.
func (o Options) bundle(ctx context.Context, p *Plan) (Result, error) {
	p.Cluster = o.Cluster // the in-process reference has a cluster mode
	all, err := BundleMutants(filepath.Join(o.Root, "lua"))
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(o.Stdout, "bundle: %d mutants; the scripts each clause runs\n", len(all))
	// The reference's profile watched the scripts each clause runs; without one, the
	// in-process reference is profiled for them alone.
	dir := o.profileDir(PortReference)
	if _, err := os.Stat(filepath.Join(dir, "runs.json")); err != nil {
		dir = o.profileDir(PortBundle)
	}
	runs, err := p.Profiled(ctx, Profiling{Env: func(string) []string { return nil }, Monitor: true, ByContract: o.ByContract}, dir, o.Workers)
	if err != nil {
		return Result{}, err
	}
	cov, err := bundleCoverage(filepath.Join(o.Root, "lua"), runs)
	if err != nil {
		return Result{}, err
	}
	s, err := o.sample(p, all, runs, cov)
	if err != nil {
		return Result{}, err
	}
	next := make(chan Mutant)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range next {
				dir := filepath.Join(p.Dir, "scripts", safeName(m.ID))
				if err := applyBundle(o.Root, m, dir); err != nil {
					_ = p.record(m.Port, Verdict{ID: m.ID, Status: Error, Detail: err.Error()})
					continue
				}
				v := p.Certify(ctx, m, Subject{Args: []string{"-scripts", dir}})
				fmt.Fprintf(o.Stdout, "bundle: %s %s %s\n", m.Key(), v.Status, v.By)
				os.RemoveAll(dir)
			}
		}()
	}
	for _, m := range s {
		if (m.Covered || p.Cluster) && ctx.Err() == nil {
			next <- m
		}
	}
	close(next)
	wg.Wait()
	return Result{Mutants: len(all), Sample: s}, ctx.Err()
}

// profileDir is where a port's profile of this checkout is kept.
func (o Options) profileDir(port string) string {
	unit := "clause"
	if o.ByContract {
		unit = "contract"
	}
	return filepath.Join(o.Out, "profile", port+"-"+unit+"-"+o.digest)
}

// shellQuote quotes a path for a command line split shell-like.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, " '\"\\$`") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Reread reads back the results of a finished run from its folder (each port's plan and
// verdicts under Out/run), so that a triage file edited since can be applied without running
// the certifications again (emq-mutation -retally). Mutants, which the plan does not keep, is 0.
func Reread(o Options) ([]Result, error) {
	if len(o.Ports) == 0 {
		o.Ports = Ports
	}
	var results []Result
	for _, port := range o.Ports {
		dir := filepath.Join(o.Out, "run", port)
		b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
		if err != nil {
			return results, fmt.Errorf("%s: no finished run to read: %w", port, err)
		}
		var p Plan
		if err := json.Unmarshal(b, &p); err != nil {
			return results, fmt.Errorf("%s/plan.json: %w", dir, err)
		}
		p.Dir = dir
		r := Result{Port: port}
		for _, m := range p.Mutants {
			r.Sample = append(r.Sample, m)
		}
		sort.Slice(r.Sample, func(i, j int) bool { return less(r.Sample[i].Key(), r.Sample[j].Key()) })
		if r.Verdicts, err = p.Verdicts(port); err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}
