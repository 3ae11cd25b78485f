// Package runner is a certification run as a package: given a port (a drivers.Factory) and the
// servers its clauses need, it runs the fourteen contracts, prints one line per contract and the
// failures, ends with CONFORMANCE n/14, writes the certification folder and says the exit
// status. cmd/emq-conform is a flag shell over it; a Go port's own go test calls it the same way
// (README, "certify from your own go test").
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/known"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// Exit statuses of a run.
const (
	ExitCertified = 0 // certified, or every selected contract passed or failed only as listed known failing
	ExitFailed    = 1 // a contract failed, is not claimed, or did not run every clause; or the known-failing list is stale
	ExitHarness   = 2 // the harness itself could not run (no Valkey, a bad option)
)

// Options are what a run needs: a port and the servers it is certified against, what runs, and
// where the reports go. Factory and Valkey (or Cluster) are required.
type Options struct {
	// Factory starts a fresh port session per clause.
	Factory drivers.Factory
	// PortCommand is the port's command line, for the reports ("" for an in-process port).
	PortCommand string
	// Valkey is a dedicated Valkey 8.1 (every clause FLUSHALLs it).
	Valkey string
	// Cluster, instead of Valkey, names the nodes of a dedicated Valkey Cluster: the run is then
	// against it (hello with cluster: true, the seed the first node).
	Cluster []string
	// Servers start the other servers clauses need, by contracts.Server name (contracts.Given
	// for one given by address). A server not given leaves its clauses NOT RUN: the run is then
	// not a certification.
	Servers map[string]contracts.Starter
	// Parallel, given more than one Valkey, runs the clauses on all of them at once.
	Parallel Parallel

	// Labels and Focus select contracts and clauses.
	Labels, Focus []string
	// KnownFailing and KnownFlaky name the clauses that may fail, as clause-id patterns
	// ("C10/dead/*", "*/*/fields", "C04" for all of C04) or "@" and a file of them (package
	// contracts/known). A known-failing clause that passes, or a pattern that matches no clause,
	// is a stale entry: the run fails (exit 1) and says so.
	KnownFailing, KnownFlaky []string
	// Seed replays the model-checked walks; 0 is the fixed default.
	Seed int64
	// FailFast stops at the first failing clause (a mutation test): never a certification.
	// First, if set, is a regular expression of clause ids that run before the others.
	FailFast bool
	First    *regexp.Regexp

	// Out is the certification folder; "" is certification/<port>.
	Out string
	// Stdout gets the console (contract lines, failures, the verdict); Stderr the notes. Nil:
	// os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Replay is the program (and flags) the replay line of a failed run names; "" is
	// emq-conform.
	Replay string

	// SelfTest judges something else than the port as given; its zero value certifies.
	SelfTest SelfTest

	known     *known.Lists // KnownFailing and KnownFlaky, read
	unmatched []string     // their patterns that match no clause: stale
}

// SelfTest is a run that judges behaviour alone: the kit's self-test (a mutant of the reference,
// emq-selftest) or a port's edited copy of lua/ (emq-conform -admit-scripts). Such a run is not
// a certification, and Note says so in every report.
type SelfTest struct {
	// Admit names script SHA1s (sha1 → script name) the wire law accepts beside the bundle's,
	// and Digest the digest of the bundle they make, which C01 accepts beside the kit's.
	Admit  map[string]string
	Digest string
	// Note says what was judged instead of the port as given.
	Note string
}

// Outcome is a finished run.
type Outcome struct {
	Result     *verdict.Result
	Facts      report.Facts
	Dir        string // the certification folder
	Transcript string // its transcript's path
	Exit       int
}

// HarnessError is a run the harness could not do: nothing is said of the port (exit 2).
type HarnessError struct{ Err error }

func (e *HarnessError) Error() string { return "HARNESS ERROR: " + e.Err.Error() }
func (e *HarnessError) Unwrap() error { return e.Err }

func harness(format string, a ...any) error { return &HarnessError{fmt.Errorf(format, a...)} }

// consoleLines bounds each exchange, wire trace and stderr tail on the console.
const consoleLines = 24

// Run certifies o.Factory. A returned error is a HarnessError; otherwise Outcome.Exit says the
// verdict.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Factory == nil {
		return nil, harness("no port to certify")
	}
	defer closeFactory(o.Factory)
	if _, err := contracts.Select(len(o.Cluster) > 0, o.Labels, o.Focus); err != nil {
		return nil, harness("%v", err)
	}
	if err := o.loadKnown(); err != nil {
		return nil, err
	}
	bundle, err := lua.Load()
	if err != nil {
		return nil, harness("the script bundle: %v", err)
	}
	vk, err := o.server(ctx)
	if err != nil {
		return nil, err
	}
	facts := report.Facts{
		Port: o.Factory.Name(), PortCommand: o.PortCommand, KitVersion: contracts.KitVersion,
		Bundle: lua.Version, BundleDigest: bundle.Digest(), ValkeyVersion: vk.Name + " " + vk.Version, Mutant: o.SelfTest.Note,
		Cluster: len(o.Cluster) > 0,
	}
	if err := o.probe(ctx, vk, &facts); err != nil {
		return nil, err
	}
	out := o.Out
	if out == "" {
		out = filepath.Join("certification", report.Label(facts.Port))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, harness("-out: %v", err)
	}
	var res *verdict.Result
	if len(o.Parallel.Valkeys) > 1 {
		res, err = o.parallel(ctx, bundle, vk, facts)
	} else {
		var cfg *contracts.Config
		if cfg, err = o.config(o.Factory, bundle, vk); err == nil {
			res, err = o.run(ctx, cfg, vk, facts, out)
		}
	}
	if err != nil {
		return nil, err
	}
	if res.Hello != nil {
		facts.PortRuntime = res.Hello.Runtime
	}
	return o.finish(res, facts, out)
}

// loadKnown reads the known lists, and says at once each pattern that matches no clause (the
// run will fail on it).
func (o *Options) loadKnown() error {
	var err error
	o.known = &known.Lists{}
	if o.known.Failing, err = known.Load(o.KnownFailing, "known-failing"); err != nil {
		return harness("%v", err)
	}
	if o.known.Flaky, err = known.Load(o.KnownFlaky, "known-flaky"); err != nil {
		return harness("%v", err)
	}
	o.unmatched = o.known.Unmatched(contracts.Clauses(len(o.Cluster) > 0))
	for _, u := range o.unmatched {
		fmt.Fprintf(o.Stderr, "emq-conform: stale entry: %s; the run will fail until it is removed\n", u)
	}
	return nil
}

// config is the contracts' configuration for a run of port against vk.
func (o *Options) config(port drivers.Factory, bundle *lua.Bundle, vk server) (*contracts.Config, error) {
	cfg := &contracts.Config{Factory: port, Valkey: vk.Addr, Cluster: o.Cluster, Bundle: bundle, Seed: o.Seed,
		Admit: o.SelfTest.Admit, AdmitDigest: o.SelfTest.Digest}
	for name, start := range o.Servers {
		if err := cfg.SetServer(name, start); err != nil {
			return nil, harness("%v", err)
		}
	}
	return cfg, nil
}

// server checks the run's Valkey (or cluster; with Parallel, the first lane's Valkey).
func (o *Options) server(ctx context.Context) (server, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch {
	case len(o.Parallel.Valkeys) > 1:
		return o.parallelServer(ctx)
	case len(o.Cluster) > 0 && o.Valkey != "":
		return server{}, harness("-valkey and -cluster exclude each other: a run is against one server")
	case len(o.Cluster) > 0:
		vk, err := checkCluster(ctx, o.Cluster)
		if err != nil {
			return server{}, harness("no Valkey Cluster: %v", err)
		}
		return vk, nil
	case o.Valkey == "":
		return server{}, harness("no Valkey: Options.Valkey names none (a run needs a dedicated Valkey 8.1)")
	}
	vk, err := checkValkey(ctx, o.Valkey)
	if err != nil {
		return server{}, harness("no Valkey: %v", err)
	}
	return vk, nil
}

// probe opens one session to learn the port's name and runtime for the reports. A port that
// never completes a hello against the run's Valkey is a harness error at once: every clause
// would only wait for it again. On a cluster, a port that refuses cluster mode runs on, every
// clause NOT CLAIMED.
func (o *Options) probe(ctx context.Context, vk server, facts *report.Facts) error {
	cluster := len(o.Cluster) > 0
	h, cerr, err := probe(ctx, o.Factory, protocol.HelloArgs{Valkey: vk.Addr, Cluster: cluster})
	if err == nil && cerr != nil {
		// The port is up: a session that does not end cleanly fails the clauses (each ends its
		// session with close, [B-24]); it is not the harness's trouble.
		fmt.Fprintf(o.Stderr, "emq-conform: the port answered hello, but its session did not end cleanly: %v\n", cerr)
	}
	var ue *drivers.UnsupportedError
	switch {
	case err == nil:
		facts.PortRuntime = h.Runtime
		if o.PortCommand != "" {
			facts.Port = h.Name
		}
		if cluster && !slices.Contains(h.Capabilities, protocol.CapCluster) {
			fmt.Fprintf(o.Stderr, "emq-conform: the port does not declare cluster mode (hello capability %q): every clause will be NOT CLAIMED\n", protocol.CapCluster)
		}
	case cluster && (errors.As(err, &ue) || errors.Is(err, emqerr.Server)):
		fmt.Fprintf(o.Stderr, "emq-conform: the port's first hello with cluster: true failed: %v\n"+
			"emq-conform: a port that does not support cluster mode (hello capability %q) has every clause NOT CLAIMED on a cluster\n", err, protocol.CapCluster)
	default:
		return harness("the port never completed a hello against %s %s (%s): %v", vk.Name, vk.Version, vk.Addr, err)
	}
	return nil
}

// run runs the contracts, the contract lines on the console as they finish.
func (o *Options) run(ctx context.Context, cfg *contracts.Config, vk server, facts report.Facts, out string) (*verdict.Result, error) {
	// Ginkgo's own reporter writes to standard output; it goes to ginkgo.log instead, and the
	// console gets the contract lines.
	console, restore, err := divertStdout(filepath.Join(out, "ginkgo.log"), o.Stdout)
	if err != nil {
		return nil, harness("%v", err)
	}
	defer restore()
	against := vk.Name + " " + vk.Version
	if len(o.Cluster) > 0 {
		against = fmt.Sprintf("a Valkey Cluster (%s %s, %d nodes, seed %s)", vk.Name, vk.Version, len(o.Cluster), vk.Addr)
	}
	fmt.Fprintf(console, "EchoMQ conformance: %s against %s (bundle %s)\n", facts.Port, against, lua.Version)
	res, err := contracts.Run(ctx, []*contracts.Config{cfg}, o.runOptions(console))
	if err != nil {
		return nil, harness("%v", err)
	}
	return res, nil
}

// runOptions are the run's selection, each contract's line to console as it finishes.
func (o *Options) runOptions(console io.Writer) contracts.RunOptions {
	ro := contracts.RunOptions{Labels: o.Labels, Focus: o.Focus, Known: o.known,
		Progress: func(c verdict.ContractResult) { fmt.Fprintln(console, report.Line(c)) }, FailFast: o.FailFast}
	if o.First != nil {
		ro.First = o.First.MatchString
	}
	return ro
}

// finish prints what failed and the verdict, and writes the certification folder.
func (o *Options) finish(res *verdict.Result, facts report.Facts, out string) (*Outcome, error) {
	res.Stale = append(res.Stale, o.unmatched...)
	res.Certified = res.Certified && len(res.Stale) == 0
	// What failed, in full, before the verdict line: the rule, expected and got, and the lines
	// exchanged with the port (the last of them; all of them in the reports), the simplest of
	// each contract first; then the failed ids by rule and a line that replays them.
	fmt.Fprint(o.Stdout, report.NotOffered(res))
	fmt.Fprint(o.Stdout, report.Failures(res, consoleLines))
	fmt.Fprint(o.Stdout, report.ByRule(res))
	if l := report.Replay(res, o.Replay, o.PortCommand, o.Seed); l != "" {
		fmt.Fprintln(o.Stdout, l)
	}
	if l := report.SpreadLine(res); l != "" {
		fmt.Fprintln(o.Stdout, l)
	}
	fmt.Fprint(o.Stdout, report.StaleLines(res))
	fmt.Fprintln(o.Stdout, report.Summary(res))
	fmt.Fprintf(o.Stdout, "took %s\n", res.Duration.Round(100*time.Millisecond))
	path, err := report.Write(out, res, facts)
	if err != nil {
		return nil, harness("writing reports: %v", err)
	}
	html, _ := filepath.Abs(filepath.Join(out, "report.html"))
	fmt.Fprintf(o.Stdout, "reports: %s (transcript %s, badge.svg)\n", out, filepath.Base(path))
	fmt.Fprintf(o.Stdout, "report: %s\n", html)
	return &Outcome{Result: res, Facts: facts, Dir: out, Transcript: path, Exit: ExitCode(res)}, nil
}

// ExitCode is a result's exit status.
func ExitCode(r *verdict.Result) int {
	// An unfiltered run that left clauses unrun (a server it was not given) certifies nothing.
	failed := len(r.Stale) > 0 || (!r.Filtered && r.ClausesRun < r.ClausesTotal) || (!r.Filtered && r.Spread != nil && !r.Spread.Covered())
	for _, c := range r.Contracts {
		switch c.Status {
		case verdict.StatusHarnessError:
			return ExitHarness
		case verdict.StatusFail, verdict.StatusNotClaimed:
			failed = true
		}
	}
	if failed {
		return ExitFailed
	}
	return ExitCertified
}

// probe opens one session to learn the port's name and runtime: err is the start's or the
// hello's, closeErr the session's end.
func probe(ctx context.Context, f drivers.Factory, a protocol.HelloArgs) (h protocol.HelloResult, closeErr, err error) {
	d, err := f.Start(ctx)
	if err != nil {
		return h, nil, err
	}
	h, err = d.Hello(ctx, a)
	return h, d.Close(ctx), err
}

// closeFactory ends what a factory keeps between sessions (a port process started ahead).
func closeFactory(f drivers.Factory) {
	if c, ok := f.(io.Closer); ok {
		_ = c.Close()
	}
}

// IsHarness tells a harness error.
func IsHarness(err error) bool {
	var he *HarnessError
	return errors.As(err, &he)
}
