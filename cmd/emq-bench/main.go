// Command emq-bench measures the EchoMQ bus beside BullMQ and asynq (Valkey), River,
// graphile-worker and pg-boss (PostgreSQL) and the kit's Oban-shaped model side by side in one
// run, with each engine's ceiling, then the bus's drain across Valkey Cluster primaries (the
// scale axis), and writes bench.out, bench.json, bench.html and SVG latency plots into -out.
//
//	go run ./cmd/emq-bench -mode ci|full -out DIR [-durability] [-gate bench/gate.json [-baseline REF]] [-only SCENARIOS] [-systems SYSTEMS]
//	    [-producers N -workers W -pg-pool C -backlog B -batch K -rate R]
//
// Valkey comes from EMQ_VALKEY_ADDR when set, else is started natively (see internal/engines);
// PostgreSQL is started for the run (its Node.js systems need more connections than a default
// server gives), and the -durability axis starts its own of both.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emq-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("emq-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "ci", "ci (a few minutes on 2 cores), full (longer repeats) or tiny (smoke)")
	out := fs.String("out", "out/bench", "directory for bench.out, bench.json and the SVG plots")
	dur := fs.Bool("durability", false, "add an axis with guarantees matched: Valkey appendfsync always beside Postgres synchronous_commit=on")
	var o bench.Overrides
	fs.IntVar(&o.Producers, "producers", 0, "concurrent producers N, the same for every system (0: the mode's)")
	fs.IntVar(&o.Workers, "workers", 0, "worker slots W, the same for every system (0: the mode's)")
	fs.IntVar(&o.PGPool, "pg-pool", 0, "connections of the Postgres pool the Postgres systems share (0: the mode's)")
	fs.IntVar(&o.Backlog, "backlog", 0, "jobs pre-filled for the drain (0: the mode's)")
	fs.IntVar(&o.Batch, "batch", 0, "jobs per batch in enqueue-batch (0: the mode's)")
	fs.Float64Var(&o.Rate, "rate", 0, "offered jobs/s of the latency scenario (0: the mode's)")
	only := fs.String("only", "", "comma-separated scenarios to run (ceilings always run with any of them; \"scale\": the scale axis across cluster primaries, which needs no other engine); empty: all")
	systems := fs.String("systems", "", "comma-separated systems to open (bus, bullmq, asynq, river, graphile-worker, graphile-worker-w, pg-boss, oban-shaped); empty: all. A gate needs the systems its ratios name")
	gateFile := fs.String("gate", "", "thresholds on same-run ratios (bench/gate.json): the run fails when one is missed twice; its baseline check compares the bus with its baseline build")
	baselineRef := fs.String("baseline", os.Getenv("BENCH_BASELINE"), "the gate's baseline check: the git ref the working tree's bus is compared with (default $BENCH_BASELINE, else the last release tag)")
	redraw := fs.String("redraw", "", "redraw DIR's bench.out, bench.html and plots from its bench.json, measuring nothing")
	strict := fs.Bool("strict", os.Getenv("BENCH_STRICT") != "", "a gate check the machine was too busy to judge fails the run too (default: $BENCH_STRICT set); for a runner that has the machine to itself")
	maxOutside := fs.Float64("max-outside", 0, "refuse to write the report when more than this share of the machine's cores was busy with work not this run's (0: write whatever the load)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *redraw != "" {
		return redrawDir(*redraw)
	}
	p, err := bench.ParamsFor(*mode)
	if err != nil {
		return err
	}
	if _, err := o.Apply(p); err != nil {
		return err
	}
	cfg := bench.Config{Mode: *mode, Overrides: o, Only: splitList(*only), Systems: splitList(*systems), Durability: *dur, Progress: stderr,
		Baseline: *baselineRef}
	if *gateFile != "" {
		if cfg.Gate, err = bench.LoadGate(*gateFile); err != nil {
			return err
		}
	}
	rep, err := bench.Execute(ctx, cfg)
	if err != nil {
		return err
	}
	if busy := rep.Outside(); *maxOutside > 0 && busy > *maxOutside {
		return fmt.Errorf("%w: %.0f%% of the machine's cores were busy with other work (median over the measurements; limit %.0f%%): %s left as it was; run again on a quiet machine",
			errBusy, 100*busy, 100**maxOutside, *out)
	}
	if err := report.WriteAll(*out, rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(stderr, "emq-bench: wrote %s/bench.out, bench.json and plots in %.0fs\n", *out, rep.Seconds)
	if cfg.Gate == nil {
		return nil
	}
	if !rep.GatePassed() {
		return fmt.Errorf("%w:\n  %s", errGate, strings.Join(rep.GateFailures(), "\n  "))
	}
	if nj := rep.GateNotJudged(); len(nj) > 0 {
		msg := fmt.Sprintf("GATE NOT JUDGED: %d check(s) missed with no evidence either way (a machine too busy for the thresholds to speak, or a rival that could not keep up with the offered rate); every other check passed:\n  %s",
			len(nj), strings.Join(nj, "\n  "))
		if *strict {
			return fmt.Errorf("%w: %s", errNotJudged, msg)
		}
		fmt.Fprintf(stderr, "emq-bench: %s\nemq-bench: exit 0: not a pass and not a failure; -strict (BENCH_STRICT=1) makes it fail\n", msg)
	}
	return nil
}

var (
	errBusy      = errors.New("the machine was busy")
	errNotJudged = errors.New("-strict")
	errGate      = errors.New("GATE FAIL: a same-run ratio missed its threshold twice, or the bus is slower than its baseline beyond a margin (see the GATE section of bench.out)")
)

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// redrawDir rewrites a record's text, page and plots from its bench.json alone.
func redrawDir(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		return err
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s/bench.json: %w", dir, err)
	}
	return report.WriteAll(dir, &rep)
}
