package mutation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/echomq/kit/contracts"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
)

// Plan is what a run hands its hooks (the Stryker command, the go shim) and its own workers:
// the judge, the server pool, the clauses, the sample. It is written as plan.json in Dir, which
// the hooks find through the EMQ_MUTATION_PLAN variable.
type Plan struct {
	Dir   string `json:"dir"`   // the run's working folder: locks, verdicts, certification folders
	Root  string `json:"root"`  // the kit's checkout
	Judge string `json:"judge"` // emq-selftest, built from the checkout (never from a mutated copy)
	// Pool holds one server set per certification that may run at once; Locks is the folder of
	// their lock files (shared by every port's plan).
	Pool  []ServerSet `json:"pool"`
	Locks string      `json:"locks"`
	// Clauses are every clause of a standalone certification, in the harness's order.
	Clauses []string `json:"clauses"`
	// FailFast: the judge has -fail-fast and -first, so one run stops at the first failure
	// and runs the covering clauses first. Without them, the covering clauses run alone first
	// (-focus) and, for a survivor, the others after.
	FailFast bool `json:"fail_fast"`
	// Partial: a survivor of the clauses that execute its code is not run through the others.
	// A certification's coverage is a union over one pristine run, so this is exact only where
	// the port's path does not depend on timing; off, every survivor had a whole certification.
	Partial bool `json:"partial"`
	// Cluster: the port has a cluster mode and each set a cluster, so a survivor of the
	// standalone certification is certified against the cluster too (stage "cluster").
	Cluster bool `json:"cluster"`
	// Pristine is the port unmutated, which a kill is held to (confirm).
	Pristine Subject `json:"pristine"`
	// Deadline bounds one certification (a mutant past it is a Timeout).
	Deadline time.Duration `json:"deadline"`
	// Mutants are the sample, by the tool's id.
	Mutants map[string]Mutant `json:"mutants"`
	// Go is the real go command; Targets the pristine sources gremlins mutates (path → SHA-256)
	// and Profile the coverage profile the shim answers gremlins' coverage run with.
	Go      string            `json:"go,omitempty"`
	Targets map[string]string `json:"targets,omitempty"`
	Profile string            `json:"profile,omitempty"`
}

// PlanEnv names the variable that gives a hook its run's folder.
const PlanEnv = "EMQ_MUTATION_PLAN"

// WritePlan writes p into p.Dir.
func (p *Plan) write() error {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.Dir, "plan.json"), b, 0o644)
}

// LoadPlan reads the plan of the run the environment names.
func LoadPlan() (*Plan, error) {
	dir := os.Getenv(PlanEnv)
	if dir == "" {
		return nil, fmt.Errorf("%s is not set: this hook runs under emq-mutation", PlanEnv)
	}
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s/plan.json: %w", dir, err)
	}
	return &p, nil
}

// Subject is the mutated port as the judge runs it: its flags (-port CMD, or -scripts DIR) and
// the environment it needs on top of the run's (Stryker's active mutant).
type Subject struct {
	Args []string
	Env  []string
}

// Certify judges mutant m, run as subj, on a server set of the pool: the clauses that execute
// its code first, the first failure kills it. A mutant no clause executes is NoCoverage without
// a run. The verdict is also recorded in the plan's folder (see Verdicts).
func (p *Plan) Certify(ctx context.Context, m Mutant, subj Subject) Verdict {
	start := time.Now()
	v := p.certify(ctx, m, subj)
	v.ID, v.Took = m.ID, time.Since(start).Seconds()
	if err := p.record(m.Port, v); err != nil && v.Status != Error {
		v = Verdict{ID: m.ID, Status: Error, Detail: "recording the verdict: " + err.Error(), Took: v.Took}
	}
	return v
}

func (p *Plan) certify(ctx context.Context, m Mutant, subj Subject) Verdict {
	uncovered := Verdict{Status: NoCoverage, Detail: "no clause of a certification executes it"}
	if !m.Covered && !p.Cluster {
		return uncovered
	}
	ctx, cancel := context.WithTimeout(ctx, p.Deadline)
	defer cancel()
	set, release, err := p.lease(ctx)
	if err != nil {
		return Verdict{Status: Error, Detail: "no server set: " + err.Error()}
	}
	defer release()
	v := uncovered // the standalone profile runs no clause through it
	if m.Covered {
		if v = p.standalone(ctx, m, subj, set); v.Status != Survived || !p.Cluster {
			return v
		}
	}
	// A port's certification is also its certification against a cluster (make conform
	// CLUSTER=1), whose hellos take the code paths of cluster mode: a survivor of the
	// standalone one, or code no standalone clause runs, meets the whole of it.
	dir := filepath.Join(p.Dir, "certs", m.Port, safeName(m.ID))
	var sel []string
	if p.FailFast {
		sel = []string{"-fail-fast"}
	}
	c := p.confirm(ctx, dir, subj, set, set.clusterArgs(), p.stage(ctx, dir, "cluster", subj, set, append(set.clusterArgs(), sel...)...))
	switch {
	case c.Status != Survived:
		return c
	case !m.Covered:
		c.Detail = "no clause of a standalone certification executes it, and the cluster certification passed it"
		return c
	}
	return v // the standalone survivor's folder is the one kept
}

// standalone judges m by a certification against the set's standalone Valkey.
func (p *Plan) standalone(ctx context.Context, m Mutant, subj Subject, set ServerSet) Verdict {
	dir := filepath.Join(p.Dir, "certs", m.Port, safeName(m.ID))
	first := contracts.IDPattern(m.Clauses)
	if p.FailFast {
		sel := "-first"
		if p.Partial {
			sel = "-focus"
		}
		return p.confirm(ctx, dir, subj, set, nil, p.stage(ctx, dir, "first", subj, set, "-fail-fast", sel, first))
	}
	v := p.stage(ctx, dir, "first", subj, set, "-focus", first)
	rest := p.others(m.Clauses)
	if v.Status != Survived || p.Partial || len(rest) == 0 {
		return p.confirm(ctx, dir, subj, set, nil, v)
	}
	return p.confirm(ctx, dir, subj, set, nil, p.stage(ctx, dir, "rest", subj, set, "-focus", contracts.IDPattern(rest)))
}

// confirm holds a kill to the pristine port: the clause that failed the mutant must pass the
// pristine port, run alone on the same servers (mode: the cluster's flags for a kill in the
// cluster stage). A clause the pristine port fails too (one that depends on the clauses run
// before it, or on timing) leaves the mutant to a whole certification in the harness's order,
// whose verdict stands.
func (p *Plan) confirm(ctx context.Context, dir string, subj Subject, set ServerSet, mode []string, v Verdict) Verdict {
	if v.Status != Killed || v.By == "hello" {
		return v
	}
	prefix := ""
	if len(mode) > 0 {
		prefix = "cluster-"
	}
	if pv := p.stage(ctx, dir, prefix+"pristine", p.Pristine, set, append(slices.Clone(mode), "-focus", contracts.IDPattern([]string{v.By}))...); pv.Status == Survived {
		return v
	} else if ctx.Err() != nil {
		return pv
	}
	p.note("%s: %s killed it, but the pristine port fails it alone too: a whole certification decides", filepath.Base(dir), v.By)
	sel := slices.Clone(mode)
	if p.FailFast {
		sel = append(sel, "-fail-fast")
	}
	w := p.stage(ctx, dir, prefix+"whole", subj, set, sel...)
	if w.Status == Survived {
		w.Detail = v.By + " failed it only out of the harness's order"
	}
	return w
}

// others are the clauses not in these, in the harness's order.
func (p *Plan) others(these []string) []string {
	in := map[string]bool{}
	for _, c := range these {
		in[c] = true
	}
	var out []string
	for _, c := range p.Clauses {
		if !in[c] {
			out = append(out, c)
		}
	}
	return out
}

// stage runs the judge once and reads its verdict from the certification folder.
func (p *Plan) stage(ctx context.Context, dir, name string, subj Subject, set ServerSet, sel ...string) Verdict {
	out := filepath.Join(dir, name)
	if err := os.RemoveAll(out); err != nil {
		return Verdict{Status: Error, Detail: err.Error()}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Verdict{Status: Error, Detail: err.Error()}
	}
	// A cluster stage's sel carries the cluster's servers (clusterArgs); its nodes are flushed too.
	addrs, servers := []string{set["-valkey"]}, set.Args()
	if slices.Contains(sel, clusterKey) {
		addrs, servers = append(addrs, strings.Split(set[clusterKey], ",")...), nil
	}
	for _, a := range addrs {
		if err := flush(ctx, a); err != nil {
			return Verdict{Status: Error, Detail: "flushing " + a + ": " + err.Error()}
		}
	}
	args := append(append(append([]string{"-out", out}, subj.Args...), servers...), sel...)
	cmd := exec.CommandContext(ctx, p.Judge, args...)
	cmd.Dir = p.Root
	cmd.Env = append(os.Environ(), subj.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the port too
	log, err := os.Create(filepath.Join(out, "console.log"))
	if err != nil {
		return Verdict{Status: Error, Detail: err.Error()}
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	v := Verdict{Stage: name, Dir: out}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		v.Status, v.Detail = Timeout, fmt.Sprintf("the certification overran %s", p.Deadline)
		return v
	case err == nil:
		v.Status = Survived
		return v
	case !errors.As(err, &ee):
		v.Status, v.Detail = Error, err.Error()
		return v
	case ee.ExitCode() == 2:
		return harnessExit(v, filepath.Join(out, "console.log"))
	}
	return readVerdict(v, filepath.Join(out, "report.json"))
}

// harnessExit reads a run that ended with status 2: a port that never completes its first
// hello is told apart from the pristine port (killed); anything else is the harness's trouble.
func harnessExit(v Verdict, console string) Verdict {
	b, _ := os.ReadFile(console)
	text := strings.TrimSpace(string(b))
	if i := strings.Index(text, "never completed a hello"); i >= 0 {
		v.Status, v.By, v.Detail = Killed, "hello", lastLine(text)
		return v
	}
	v.Status, v.Detail = Error, lastLine(text)
	return v
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// readVerdict is the first failed clause of a run that exited 1.
func readVerdict(v Verdict, path string) Verdict {
	r, err := report.ReadJSON(path)
	if err != nil {
		v.Status, v.Detail = Error, "exit 1 and no report: "+err.Error()
		return v
	}
	for _, c := range r.Result.Contracts {
		for _, cl := range c.Clauses {
			switch cl.Status {
			case verdict.StatusFail:
				v.Status, v.By = Killed, cl.ID
				if len(cl.Failures) > 0 {
					v.Rule, v.Detail = cl.Failures[0].Rule, oneLine(cl.Failures[0].Got)
				}
				return v
			case verdict.StatusHarnessError:
				v.Status, v.By, v.Detail = Error, cl.ID, oneLine(cl.Reason)
				return v
			}
		}
	}
	v.Status, v.Detail = Error, "exit 1 with no failed clause in the report"
	return v
}

func oneLine(s string) string {
	s = Fold(s)
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// safeName is an id usable as a file name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == ' ' {
			return '_'
		}
		return r
	}, id)
}

// record writes a verdict into the plan's folder.
func (p *Plan) record(port string, v Verdict) error {
	dir := filepath.Join(p.Dir, "verdicts", port)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, safeName(v.ID)+".json"), b, 0o644)
}

// Verdicts reads the verdicts recorded for a port, by mutant id.
func (p *Plan) Verdicts(port string) (map[string]Verdict, error) {
	files, err := filepath.Glob(filepath.Join(p.Dir, "verdicts", port, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]Verdict{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v Verdict
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[v.ID] = v
	}
	return out, nil
}
