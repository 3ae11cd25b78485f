package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// A parallel run shares the clauses among worker processes. Every worker registers every clause
// and walks them in the same order; before a selected clause runs, the worker claims it by
// creating its file in the claims folder (O_EXCL: exactly one worker wins), so the clauses are
// dealt out as the workers come free. Each worker prints the verdict of every clause it ran as
// one line on its standard output; the parent prints a contract's line once all its clauses are
// in, and writes the reports from the verdicts as a run in one process would.

// DefaultParallel is how many workers a run takes when the kit starts its own Valkeys: one more
// than the cores (many clauses wait on the server's clock, not the CPU), at most 4. The reports
// are those of a serial run whatever it is.
func DefaultParallel() int { return min(4, runtime.NumCPU()+1) }

// clauseLine starts a worker's verdict line; anything else on its stdout is ignored.
const clauseLine = "emq-clause "

// parallel runs the clauses on o.Parallel workers and folds their verdicts.
func (o *Options) parallel(ctx context.Context, vk server, facts report.Facts, out string, hello *protocol.HelloResult) (*contracts.Result, error) {
	if len(o.Cluster) > 0 {
		return nil, harness("-parallel runs against standalone Valkeys only")
	}
	if o.Worker == nil || len(o.Valkeys) != o.Parallel {
		return nil, harness("-parallel %d needs %d Valkeys and a worker command, has %d", o.Parallel, o.Parallel, len(o.Valkeys))
	}
	selected, err := contracts.Select(false, o.Labels, o.Focus)
	if err != nil {
		return nil, harness("%v", err)
	}
	claims, err := os.MkdirTemp("", "emq-conform-claims-")
	if err != nil {
		return nil, harness("%v", err)
	}
	defer os.RemoveAll(claims)
	fmt.Fprintf(o.Stdout, "EchoMQ conformance: %s against %s %s, %d workers (bundle %s)\n", facts.Port, vk.Name, vk.Version, o.Parallel, lua.Version)
	start := time.Now()
	got, err := o.workers(ctx, claims, selected)
	if err != nil {
		return nil, err
	}
	all := contracts.Clauses(false)
	var clauses []contracts.Clause
	for _, id := range all {
		cl, ok := got[id]
		switch {
		case !slices.Contains(selected, id):
			cl = contracts.Clause{ID: id, Status: contracts.StatusNotRun}
		case !ok && o.FailFast:
			cl = contracts.Clause{ID: id, Status: contracts.StatusNotRun, Reason: "fail-fast: the run stopped at a failing clause"}
		case !ok:
			cl = contracts.Clause{ID: id, Status: contracts.StatusHarnessError, Reason: "the worker that claimed it ended before its verdict (its log is in " + out + ")"}
		}
		clauses = append(clauses, cl)
	}
	r := contracts.Summarize(clauses, o.known)
	r.Duration = time.Since(start)
	r.Filtered = len(selected) < len(all) || o.FailFast
	r.FailFast = o.FailFast
	r.Hello = hello
	return r, nil
}

// workers runs the workers to their end and returns the verdicts they printed, printing each
// contract's line once all its selected clauses are in.
func (o *Options) workers(ctx context.Context, claims string, selected []string) (map[string]contracts.Clause, error) {
	var mu sync.Mutex
	got := map[string]contracts.Clause{}
	want := map[string]int{} // selected clauses per contract
	for _, id := range selected {
		want[contractID(id)]++
	}
	byContract := map[string][]contracts.Clause{}
	record := func(cl contracts.Clause) {
		mu.Lock()
		defer mu.Unlock()
		got[cl.ID] = cl
		c := contractID(cl.ID)
		byContract[c] = append(byContract[c], cl)
		if len(byContract[c]) == want[c] {
			if cr := contracts.ContractOf(c, byContract[c], o.known); cr.Status != contracts.StatusNotRun {
				fmt.Fprintln(o.Stdout, report.Line(cr))
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, o.Parallel)
	for i, vk := range o.Valkeys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = o.worker(ctx, i, vk, claims, record)
		}()
	}
	wg.Wait()
	return got, errors.Join(errs...)
}

// worker runs one worker process and reads its verdict lines.
func (o *Options) worker(ctx context.Context, i int, valkey, claims string, record func(contracts.Clause)) error {
	cmd := o.Worker(ctx, valkey, claims)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return harness("worker %d: %v", i, err)
	}
	if err := cmd.Start(); err != nil {
		return harness("worker %d: %v", i, err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), clauseLine)
		if !ok {
			continue
		}
		var cl contracts.Clause
		if err := json.Unmarshal([]byte(line), &cl); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return harness("worker %d printed a verdict that does not decode: %v", i, err)
		}
		record(cl)
	}
	if err := cmd.Wait(); err != nil && ctx.Err() == nil {
		fmt.Fprintf(o.Stderr, "emq-conform: worker %d (Valkey %s) ended: %v\n%s", i, valkey, err, stderr.String())
	}
	return ctx.Err()
}

// Work is one worker of a parallel run: it runs the selected clauses it claims in the folder
// claims, each verdict a line on o.Stdout, and writes no report.
func Work(ctx context.Context, o Options, claims string) error {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	defer closeFactory(o.Factory)
	bundle, err := lua.Load()
	if err != nil {
		return harness("the script bundle: %v", err)
	}
	vk, err := o.server(ctx)
	if err != nil {
		return err
	}
	cfg, err := o.config(bundle, vk)
	if err != nil {
		return err
	}
	console, restore, err := divertStdout(filepath.Join(claims, "ginkgo-"+strconv.Itoa(os.Getpid())+".log"), o.Stdout)
	if err != nil {
		return harness("%v", err)
	}
	defer restore()
	index := map[string]int{}
	for i, id := range contracts.Clauses(false) {
		index[id] = i
	}
	var mu sync.Mutex
	emit := func(cl contracts.Clause) {
		if o.FailFast && cl.Failed() {
			stopAll(claims) // the other workers claim nothing more
		}
		b, err := json.Marshal(cl)
		if err != nil {
			b, _ = json.Marshal(contracts.Clause{ID: cl.ID, Status: contracts.StatusHarnessError, Reason: "its verdict does not encode: " + err.Error()})
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(console, clauseLine+string(b)+"\n")
	}
	_, err = contracts.Run(cfg, contracts.RunOptions{Labels: o.Labels, Focus: o.Focus,
		Claim: func(id string) bool { return !stopped(claims) && claim(claims, index[id]) }, OnClause: emit,
		FailFast: o.FailFast, First: o.first()})
	if err != nil {
		return harness("%v", err)
	}
	return nil
}

// claim takes clause number i for this worker: true for exactly one of the workers that ask.
func claim(dir string, i int) bool {
	f, err := os.OpenFile(filepath.Join(dir, "clause-"+strconv.Itoa(i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// stopAll tells every worker of a fail-fast run to claim no more clauses; stopped reads it.
func stopAll(dir string) {
	if f, err := os.Create(filepath.Join(dir, "stop")); err == nil {
		f.Close()
	}
}

func stopped(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "stop"))
	return err == nil
}

// contractID is "C09" for "C09/retry/…".
func contractID(clauseID string) string {
	id, _, _ := strings.Cut(clauseID, "/")
	return id
}
