package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/runner"
)

// TestExitCode: a run's exit status from its result alone.
func TestExitCode(t *testing.T) {
	pass := verdict.ContractResult{ID: "C01", Status: verdict.StatusPass, ClausesRun: 2, ClausesTotal: 2}
	with := func(f func(r *verdict.Result)) *verdict.Result {
		r := &verdict.Result{Contracts: []verdict.ContractResult{pass, pass}, ClausesRun: 4, ClausesTotal: 4}
		f(r)
		return r
	}
	for _, c := range []struct {
		name string
		r    *verdict.Result
		want int
	}{
		{"every contract passed", with(func(*verdict.Result) {}), runner.ExitCertified},
		{"a contract failed", with(func(r *verdict.Result) { r.Contracts[1].Status = verdict.StatusFail }), runner.ExitFailed},
		{"a contract not claimed", with(func(r *verdict.Result) { r.Contracts[1].Status = verdict.StatusNotClaimed }), runner.ExitFailed},
		{"a harness error outranks a failure", with(func(r *verdict.Result) {
			r.Contracts[0].Status, r.Contracts[1].Status = verdict.StatusFail, verdict.StatusHarnessError
		}), runner.ExitHarness},
		{"failed only as known", with(func(r *verdict.Result) { r.Contracts[1].Status = verdict.StatusKnownFailing }), runner.ExitCertified},
		{"a stale known-failing list", with(func(r *verdict.Result) { r.Stale = []string{"C01"} }), runner.ExitFailed},
		{"an unfiltered run that left clauses unrun", with(func(r *verdict.Result) { r.ClausesRun = 3 }), runner.ExitFailed},
		{"a filtered run that left clauses unrun", with(func(r *verdict.Result) { r.ClausesRun, r.Filtered = 3, true }), runner.ExitCertified},
		{"a cluster run whose queues missed a primary", with(func(r *verdict.Result) { r.Spread = &verdict.Spread{Primaries: 3} }), runner.ExitFailed},
	} {
		if got := runner.ExitCode(c.r); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// TestBadOptionsAreHarnessErrors: options a run cannot start with are a HarnessError, before
// anything runs.
func TestBadOptionsAreHarnessErrors(t *testing.T) {
	port, err := inproc.New(inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    runner.Options
		says string
	}{
		{"no port", runner.Options{Valkey: "127.0.0.1:1"}, "no port to certify"},
		{"a selection of nothing", runner.Options{Factory: port, Valkey: "127.0.0.1:1", Focus: []string{"no-such-clause"}}, "no clause matches"},
		{"an unknown contract", runner.Options{Factory: port, Valkey: "127.0.0.1:1", Labels: []string{"C99"}}, "unknown contract id"},
		{"no Valkey", runner.Options{Factory: port}, "no Valkey"},
		{"a Valkey that does not answer", runner.Options{Factory: port, Valkey: "127.0.0.1:1"}, "no Valkey"},
		{"both Valkey and Cluster", runner.Options{Factory: port, Valkey: "127.0.0.1:1", Cluster: []string{"127.0.0.1:2"}}, "exclude each other"},
		{"parallel on a cluster", runner.Options{Factory: port, Cluster: []string{"127.0.0.1:2"}, Parallel: runner.Parallel{Valkeys: []string{"a", "b"}, Port: func() (drivers.Factory, error) { return port, nil }}}, "standalone Valkeys only"},
		{"parallel without a port per lane", runner.Options{Factory: port, Parallel: runner.Parallel{Valkeys: []string{"a", "b"}}}, "a port per lane"},
	} {
		var stdout bytes.Buffer
		c.o.Stdout, c.o.Stderr, c.o.Out = &stdout, &stdout, t.TempDir()
		out, err := runner.Run(context.Background(), c.o)
		var he *runner.HarnessError
		if out != nil || !errors.As(err, &he) || !runner.IsHarness(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: outcome %v, error %v; want a harness error saying %q", c.name, out, err, c.says)
		}
	}
}

// TestParallelIsTheSerialRun: the same selection run on one Valkey and on two at once gives
// the same verdicts, the same console lines and a byte-identical transcript.
func TestParallelIsTheSerialRun(t *testing.T) {
	a, b := enginestest.Valkey(t), enginestest.Valkey(t)
	if a.Mode == engines.ModeGiven {
		t.Skip("EMQ_VALKEY_ADDR gives one Valkey: a parallel run needs two")
	}
	port := func() (drivers.Factory, error) { return inproc.New(inproc.Options{}) }
	run := func(o runner.Options) (*runner.Outcome, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		f, err := port()
		if err != nil {
			t.Fatal(err)
		}
		o.Factory, o.Labels, o.Stdout, o.Stderr, o.Out = f, []string{"C03", "C08"}, &stdout, &stderr, t.TempDir()
		out, err := runner.Run(context.Background(), o)
		if err != nil {
			t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
		}
		return out, stdout.String()
	}
	serial, serialConsole := run(runner.Options{Valkey: a.Addr})
	parallel, parallelConsole := run(runner.Options{Parallel: runner.Parallel{Valkeys: []string{a.Addr, b.Addr}, Port: port}})
	if serial.Exit != runner.ExitCertified || parallel.Exit != serial.Exit {
		t.Fatalf("exits %d (serial) and %d (parallel), want 0 both\n%s\n%s", serial.Exit, parallel.Exit, serialConsole, parallelConsole)
	}
	for _, l := range []string{"C03 duplicate ....", "C08 complete ....", "CONFORMANCE 2/14"} {
		if !strings.Contains(serialConsole, l) || !strings.Contains(parallelConsole, l) {
			t.Errorf("the consoles do not both say %q:\nserial:\n%s\nparallel:\n%s", l, serialConsole, parallelConsole)
		}
	}
	st, err := os.ReadFile(serial.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := os.ReadFile(parallel.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(st, pt) {
		t.Errorf("the transcripts differ:\nserial:\n%s\nparallel:\n%s", st, pt)
	}
	if filepath.Base(serial.Transcript) != filepath.Base(parallel.Transcript) {
		t.Errorf("transcripts named %s and %s", serial.Transcript, parallel.Transcript)
	}
}
