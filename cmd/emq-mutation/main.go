// Command emq-mutation is `make mutation`: StrykerJS over the Node port, gremlins over the Go
// reference as emq-port and the kit's Lua operators over the bundle, every mutant judged by a
// certification on behaviour (internal/mutation). It ends with one line per port,
//
//	MUTATION <port> killed K/N (P %) equivalent E untriaged U
//
// and writes every survivor under -out. Exit status: 0 every sampled survivor triaged, 1 an
// untriaged survivor (unless -triaged=false) or a mutant with no verdict, 2 the run could not
// be made.
//
// It is also its own hooks: Stryker's test command (emq-mutation hook-node) and, run under the
// name go, the go command gremlins finds first on its PATH.
//
//	emq-mutation [-sample N] [-seed S] [-ports node,reference,bundle] [-workers 2] -stryker DIR -gremlins BIN
//	emq-mutation -retally [-out DIR] [-ports …]   (score a finished run again under the triage file)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/internal/mutation"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case filepath.Base(os.Args[0]) == "go":
		os.Exit(mutation.Shim(ctx, os.Args[1:], os.Stderr))
	case len(os.Args) > 1 && os.Args[1] == "hook-node":
		os.Exit(mutation.HookNode(ctx, os.Stderr))
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("emq-mutation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := mutation.Options{Stdout: stdout}
	var ports string
	var seed uint64
	fs.IntVar(&o.Sample, "sample", envInt("MUTATION_SAMPLE"), "mutants per port, drawn with -seed; 0: all [MUTATION_SAMPLE]")
	fs.Uint64Var(&seed, "seed", uint64(envInt("MUTATION_SEED")), "the sample's seed [MUTATION_SEED]")
	fs.StringVar(&ports, "ports", strings.Join(mutation.Ports, ","), "the ports to mutate")
	fs.IntVar(&o.Workers, "workers", 2, "certifications at once, each on a server set of its own")
	fs.StringVar(&o.Out, "out", "out/mutation", "output folder")
	fs.StringVar(&o.Stryker, "stryker", os.Getenv("EMQ_STRYKER"), "the folder ci/provision-stryker.sh prints [EMQ_STRYKER]")
	fs.StringVar(&o.Gremlins, "gremlins", os.Getenv("EMQ_GREMLINS"), "the gremlins binary ci/provision-gremlins.sh prints [EMQ_GREMLINS]")
	fs.StringVar(&o.Triage, "triage", "contracts/mutation-triage.txt", "the triage file")
	var profile string
	fs.StringVar(&profile, "profile", "clause", "what a profile runs alone: each clause, or each contract (a smoke run: 14 runs instead of 150, coarser first clauses)")
	fs.BoolVar(&o.Partial, "partial", false, "judge a survivor of the clauses that execute its code by those alone (faster; exact only where coverage does not depend on timing)")
	fs.BoolVar(&o.Cluster, "cluster", true, "start a 3-primary Valkey Cluster beside each server set and certify every survivor of the reference and the bundle against it too (make conform CLUSTER=1 is part of a certification)")
	retally := fs.Bool("retally", false, "run nothing: read the finished run under -out back and score it under the triage file as it now reads")
	triaged := fs.Bool("triaged", true, "exit 1 on an untriaged survivor (a smoke run, which only proves the machinery, sets it false)")
	fs.DurationVar(&o.Deadline, "deadline", 20*time.Minute, "one certification's bound")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Seed, o.Ports, o.ByContract = seed, strings.Split(ports, ","), profile == "contract"
	if profile != "clause" && profile != "contract" {
		fmt.Fprintf(stderr, "emq-mutation: -profile %q: want clause or contract\n", profile)
		return 2
	}
	var err error
	if o.Root, err = os.Getwd(); err != nil {
		fmt.Fprintln(stderr, "emq-mutation:", err)
		return 2
	}
	if o.Self, err = os.Executable(); err != nil {
		fmt.Fprintln(stderr, "emq-mutation:", err)
		return 2
	}
	if o.Out, err = filepath.Abs(o.Out); err != nil {
		fmt.Fprintln(stderr, "emq-mutation:", err)
		return 2
	}
	triage, err := mutation.ReadTriage(o.Triage)
	if err != nil {
		fmt.Fprintln(stderr, "emq-mutation:", err)
		return 2
	}
	start := time.Now()
	run, verb := mutation.Run, "emq-mutation"
	if *retally {
		run, verb = func(_ context.Context, o mutation.Options) ([]mutation.Result, error) { return mutation.Reread(o) }, "emq-mutation -retally"
	}
	results, runErr := run(ctx, o)
	var scores []mutation.Score
	exit := 0
	for _, r := range results {
		s, err := mutation.Write(o.Root, o.Out, r, triage)
		if err != nil {
			fmt.Fprintln(stderr, "emq-mutation:", err)
			return 2
		}
		if (*triaged && s.Untriaged > 0) || s.Errors > 0 {
			exit = 1
		}
		scores = append(scores, s)
	}
	summary := fmt.Sprintf("%s -sample %d -seed %d -ports %s -workers %d: %s\n", verb, o.Sample, o.Seed, ports, o.Workers, time.Since(start).Round(time.Second)) +
		mutation.Summary(scores)
	name := "summary.txt"
	if *retally {
		name = "summary-retally.txt" // the run's own summary keeps its wall time
	}
	if err := os.WriteFile(filepath.Join(o.Out, name), []byte(summary), 0o644); err != nil {
		fmt.Fprintln(stderr, "emq-mutation:", err)
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "emq-mutation:", runErr)
		exit = 2
	}
	fmt.Fprint(stdout, summary)
	return exit
}

func envInt(name string) int {
	var n int
	fmt.Sscan(os.Getenv(name), &n)
	return n
}
