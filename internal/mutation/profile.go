package mutation

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/echomq/kit/contracts"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/reference/resp"
)

// A profile runs every clause alone against the pristine port, each run leaving its coverage
// in a folder of its own (the port's GOCOVERDIR or NODE_V8_COVERAGE), so a mutant's covering
// clauses are those whose run executed the mutated code. The Valkey's MONITOR stream of each
// run also says which bundle scripts the clause ran (EVALSHA), for the bundle's mutants.

// ClauseRun is one run of a profile: one clause, or (ByContract) one contract's clauses.
type ClauseRun struct {
	Unit    string          `json:"unit"`    // the clause id, or the contract's ("C05")
	Clauses []string        `json:"clauses"` // the clauses the run stands for
	Dir     string          `json:"dir"`     // the coverage folder the port wrote into
	Took    time.Duration   `json:"took_ns"` // the clause's own duration
	Scripts map[string]bool `json:"scripts,omitempty"`
	// FailsAlone: the pristine port failed the clause run alone, three times (a clause that
	// depends on the clauses before it, or on timing).
	FailsAlone bool `json:"fails_alone,omitempty"`
}

// Profiling says how a profile runs the port: as subj, with env naming the coverage folder.
type Profiling struct {
	Subject Subject
	// Env is the environment that sends the port's coverage into dir.
	Env func(dir string) []string
	// Monitor records the bundle scripts each clause runs.
	Monitor bool
	// ByContract runs each contract once instead of each clause (14 runs, not 150): a mutant
	// then has every clause of a contract that executes its code as its first clauses.
	ByContract bool
}

// units are what a profile runs one at a time: each clause, or each contract, with the
// clauses each stands for.
func (p *Plan) units(byContract bool) (names []string, clauses [][]string) {
	for _, c := range p.Clauses {
		name := c
		if byContract {
			name, _, _ = strings.Cut(c, "/")
		}
		if n := len(names); n > 0 && names[n-1] == name {
			clauses[n-1] = append(clauses[n-1], c)
			continue
		}
		names, clauses = append(names, name), append(clauses, []string{c})
	}
	return names, clauses
}

// RunProfile runs every clause of the plan once, alone, as pr says; workers at a time (one
// server set each). A clause the pristine port fails alone is run twice more; if it still fails,
// its coverage is kept and the run marked FailsAlone (a kill by it is checked again: Certify).
// Any other trouble fails the profile.
func (p *Plan) RunProfile(ctx context.Context, pr Profiling, dir string, workers int) ([]ClauseRun, error) {
	names, groups := p.units(pr.ByContract)
	runs := make([]ClauseRun, len(names))
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				for try := 1; try <= 3; try++ {
					runs[i], errs[i] = p.profileOne(ctx, pr, filepath.Join(dir, strconv.Itoa(i)), names[i], groups[i])
					if errs[i] == nil && !runs[i].FailsAlone {
						break
					}
					why := "it fails when run alone"
					if errs[i] != nil {
						why = errs[i].Error()
					}
					p.note("profile: %s against the pristine port, try %d of 3: %s", names[i], try, why)
				}
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, ctx.Err()
}

func (p *Plan) profileOne(ctx context.Context, pr Profiling, dir, unit string, clauses []string) (ClauseRun, error) {
	run := ClauseRun{Unit: unit, Clauses: clauses, Dir: filepath.Join(dir, "cover")}
	if err := os.RemoveAll(run.Dir); err != nil {
		return run, err
	}
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return run, err
	}
	set, release, err := p.lease(ctx)
	if err != nil {
		return run, err
	}
	defer release()
	var stopMon func() map[string]bool
	if pr.Monitor {
		if stopMon, err = monitor(ctx, set["-valkey"]); err != nil {
			return run, err
		}
	}
	subj := Subject{Args: pr.Subject.Args, Env: append(append([]string(nil), pr.Subject.Env...), pr.Env(run.Dir)...)}
	v := p.stage(ctx, dir, "cert", subj, set, "-focus", contracts.IDPattern(clauses))
	if stopMon != nil {
		run.Scripts = stopMon()
	}
	switch v.Status {
	case Survived:
	case Killed:
		run.FailsAlone = true
	default:
		return run, fmt.Errorf("%s %s: %s (%s)", v.Status, v.By, v.Detail, v.Dir)
	}
	r, err := report.ReadJSON(filepath.Join(v.Dir, "report.json"))
	if err != nil {
		return run, err
	}
	offered := false
	for _, c := range r.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.Ran() {
				run.Took += cl.Duration
			}
			offered = offered || (cl.Ran() && cl.Status != verdict.StatusNotOffered)
		}
	}
	if !offered { // the port does not offer what the unit needs: it runs nothing of a mutant
		if err := os.RemoveAll(run.Dir); err != nil {
			return run, err
		}
		return run, os.MkdirAll(run.Dir, 0o755)
	}
	return run, nil
}

// note appends a line to the plan's log.
func (p *Plan) note(format string, a ...any) {
	f, err := os.OpenFile(filepath.Join(p.Dir, "notes.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, time.Now().Format(time.TimeOnly)+" "+format+"\n", a...)
}

var evalsha = regexp.MustCompile(`"(?i:evalsha(?:_ro)?)" "([0-9a-f]{40})"`)

// monitor watches a Valkey's MONITOR stream until stop, and returns the SHA1s of the scripts
// run by EVALSHA meanwhile.
func monitor(ctx context.Context, addr string) (stop func() map[string]bool, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	cmd, _ := resp.AppendCommand(nil, "MONITOR")
	if _, err := c.Write(cmd); err != nil {
		c.Close()
		return nil, err
	}
	rd := resp.NewReader(bufio.NewReader(c), resp.DefaultLimits())
	if v, err := rd.Read(); err != nil || v.Err() != nil {
		c.Close()
		return nil, fmt.Errorf("MONITOR on %s: %v %v", addr, err, v.Err())
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			v, err := rd.Read()
			if err != nil {
				return
			}
			if m := evalsha.FindStringSubmatch(v.Text()); m != nil {
				mu.Lock()
				seen[m[1]] = true
				mu.Unlock()
			}
		}
	}()
	return func() map[string]bool {
		time.Sleep(100 * time.Millisecond) // the last commands' echo
		c.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}, nil
}

// cheapestFirst are the clauses of the runs idx, the runs ordered by their duration, then by
// the harness's order.
func cheapestFirst(runs []ClauseRun, idx []int) []string {
	sort.SliceStable(idx, func(a, b int) bool { return runs[idx[a]].Took < runs[idx[b]].Took })
	var out []string
	for _, k := range idx {
		out = append(out, runs[k].Clauses...)
	}
	return out
}

// Profiled is RunProfile kept in dir across runs: a folder that holds a finished profile of the
// same checkout (the caller names it by the checkout's digest) is read back instead of run again.
func (p *Plan) Profiled(ctx context.Context, pr Profiling, dir string, workers int) ([]ClauseRun, error) {
	index := filepath.Join(dir, "runs.json")
	if b, err := os.ReadFile(index); err == nil {
		var runs []ClauseRun
		if names, _ := p.units(pr.ByContract); json.Unmarshal(b, &runs) == nil && len(runs) == len(names) {
			return runs, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	runs, err := p.RunProfile(ctx, pr, dir, workers)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(runs)
	if err != nil {
		return nil, err
	}
	return runs, os.WriteFile(index, b, 0o644)
}

// Digest names the checkout's state as a profile sees it: the SHA-256 of every file git tracks
// or would track (tracked, and untracked but not ignored), path and content, but for this run's
// own machinery and triage, which no certification runs.
func Digest(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
		".", ":!internal/mutation", ":!cmd/emq-mutation", ":!contracts/mutation-triage.txt")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
