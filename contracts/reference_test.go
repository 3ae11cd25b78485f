package contracts_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/internal/golden"
	"github.com/echomq/kit/internal/mutant"
)

// TestReferenceInProcess: the clean reference is certified in-process, and its transcript is
// the frozen one byte for byte (-update rewrites it).
func TestReferenceInProcess(t *testing.T) {
	r := shared(t)
	certified(t, r, "the reference")
	frozen(t, "../transcripts/conformance-reference.out", r.transcript)
}

// TestNodePort: the second runtime, written from the documents alone, is certified by the path a
// port team copies into its CI — ci/certify-port.sh, which builds emq-conform, provisions and
// starts every server a certification needs and runs the contracts on four Valkeys at once —
// with CONFORMANCE 14/14 and exit 0; its transcript is frozen like the reference's.
func TestNodePort(t *testing.T) {
	r := nodeCertified(t)
	certified(t, r, "the Node port (ci/certify-port.sh)")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); !strings.HasPrefix(lines[len(lines)-1], "certify-port: certification folder") {
		t.Errorf("the script does not end with the certification folder:\n%s", r.stderr)
	}
	frozen(t, "../transcripts/conformance-node.out", r.transcript)
}

// TestReferenceOnCluster: the in-process reference in cluster mode is certified on a fresh
// 3-primary Valkey Cluster that emq-engines starts (emq-conform -cluster start): 14/14 with every
// clause run, every clause evaluating the cluster rules, the run's queues on every primary and
// some clauses on two primaries at once. Its transcript is frozen like the standalone one.
func TestReferenceOnCluster(t *testing.T) {
	r := shared(t, "-cluster", "start")
	certified(t, r, "the reference on a Valkey Cluster")
	onCluster(t, r)
	frozen(t, "../transcripts/conformance-reference-cluster.out", r.transcript)
}

// onCluster checks what a certified cluster run must show beyond 14/14.
func onCluster(t *testing.T, r *run) {
	t.Helper()
	res := r.report.Result
	if res.ClausesRun != res.ClausesTotal {
		t.Errorf("%d of %d clauses ran", res.ClausesRun, res.ClausesTotal)
	}
	sp := res.Spread
	if sp == nil || sp.Primaries != 3 || !sp.Covered() || sp.Across == 0 {
		t.Errorf("the run's queues do not land on every primary of 3, with some clause on two at once: %+v", sp)
	}
	if !strings.Contains(r.stdout, "CLUSTER queues on 3 of 3 primaries") {
		t.Errorf("the console does not report the queues' spread:\n%s", r.stdout)
	}
	refused := false
	for _, c := range res.Contracts {
		for _, cl := range c.Clauses {
			refused = refused || (strings.HasSuffix(cl.ID, "/standalone-valkey-refused") && cl.Status == verdict.StatusPass)
			if inProcessNotOffered[cl.ID] {
				if cl.Status != verdict.StatusNotOffered {
					t.Errorf("clause %s is %s, want NOT RUN (not offered): the kit cannot run it for its own process (its wall clock, its standard input)", cl.ID, cl.Status)
				}
				continue
			}
			for _, rl := range rules.Cluster()[:3] {
				if !slices.Contains(cl.Rules, rl.ID) {
					t.Errorf("clause %s did not evaluate %s", cl.ID, rl.ID)
				}
			}
		}
	}
	if !refused {
		t.Error("C01's standalone-valkey-refused did not run and pass")
	}
}

// TestReferenceSubprocessOnCluster: the reference's port binary in cluster mode is certified on
// a fresh cluster too (make conform CLUSTER=1 runs both).
func TestReferenceSubprocessOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP in -short: TestReferenceOnCluster certifies the reference on a cluster; make conform CLUSTER=1 runs this one")
	}
	bin := bins["emq-port"]
	if bin == "" {
		t.Fatal("cmd/emq-port is missing: the reference port binary is needed")
	}
	r := conform(t, nil, "-cluster", "start", "-port", bin)
	certified(t, r, "the reference port binary on a Valkey Cluster")
	onCluster(t, r)
}

// TestNodePortOnCluster: a port that does not declare cluster mode (the Node port) is NOT
// CLAIMED on a cluster, never passed, and the run says why.
func TestNodePortOnCluster(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	r := conform(t, nil, "-cluster", "start", "-port", "node ../ports/node/port.js", "-label", "C03")
	c := r.status("C03")
	if r.exit != 1 || c.Status != verdict.StatusNotClaimed || r.report.Result.Passed != 0 {
		t.Fatalf("exit %d, C03 %s:\n%s", r.exit, c.Status, r.stdout)
	}
	if !strings.Contains(r.stderr+r.stdout, "cluster mode") {
		t.Errorf("the run does not say the port lacks cluster mode:\n%s\n%s", r.stdout, r.stderr)
	}
}

func certified(t *testing.T, r *run, who string) {
	t.Helper()
	if r.exit != 0 || !r.report.Result.Certified {
		t.Fatalf("%s is not certified (exit %d):\n%s\n%s", who, r.exit, r.stdout, failures(r))
	}
	if !strings.Contains(r.stdout, "CONFORMANCE 14/14") {
		t.Errorf("no CONFORMANCE 14/14 line:\n%s", r.stdout)
	}
}

// frozen compares a fresh transcript with the committed one (a unified diff when they differ),
// or rewrites it under -update.
func frozen(t *testing.T, path, fresh string) {
	t.Helper()
	golden.Check(t, path, fresh, *update, "make transcripts")
}

// TestReferenceSubprocess: the reference's port binary, every reply held back 1 ms (a slower
// runtime: badport's BADPORT_LATE) and driven through the subprocess driver with emq-conform's
// default flags (as many Valkeys at once as emq-conform chooses on this machine), is certified too, and
// its transcript is byte for byte the frozen one of the in-process reference run one clause at
// a time: the same verdicts, a parallel run's reports are a serial run's, and no deadline of the
// kit's fails a correct port for being slower (input-ended-inside-a-line aside: only a port with
// a standard input runs it). Every request the kit sent it matches the
// protocol schema (requestsMatchSchema), the input domains' deliberate probes aside.
func TestReferenceSubprocess(t *testing.T) {
	bin := bins["emq-port"]
	if bin == "" {
		t.Fatal("cmd/emq-port is missing: the reference port binary is needed")
	}
	dir := t.TempDir()
	r := conform(t, []string{"BADPORT_CMD=" + bin, "BADPORT_LATE=1ms"}, "-port", teePort(bins["badport"], dir))
	certified(t, r, "the reference port binary, 1 ms late")
	requestsMatchSchema(t, dir)
	if want, err := os.ReadFile("../transcripts/conformance-reference.out"); err != nil {
		t.Fatal(err)
	} else if d := golden.Diff("transcripts/conformance-reference.out (serial, in-process)", "default flags, emq-port 1 ms late", withoutClause(string(want), inputCutClause), withoutClause(r.transcript, inputCutClause)); d != "" {
		t.Errorf("a parallel run's transcript differs from the serial one:\n%s", d)
	}
}

// withoutClause drops clause id's line from a transcript, and the indented lines under it: a
// clause the in-process reference cannot run (it has no standard input) and emq-port can.
func withoutClause(transcript, id string) string {
	var out []string
	skipping := false
	for _, l := range strings.Split(transcript, "\n") {
		switch {
		case strings.HasPrefix(l, "  "+id+" "):
			skipping = true
			continue
		case skipping && strings.HasPrefix(l, "    "):
			continue
		}
		skipping = false
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// clausesByRule maps each rule id to the clauses that quote it in r's report.
func clausesByRule(t *testing.T, r *run) map[string][]string {
	t.Helper()
	if r.report == nil || r.exit != 0 {
		t.Fatalf("the pristine run failed (exit %d):\n%s", r.exit, failures(r))
	}
	out := map[string][]string{}
	for _, c := range r.report.Result.Contracts {
		for _, cl := range c.Clauses {
			for _, id := range cl.Rules {
				out[id] = append(out[id], cl.ID)
			}
		}
	}
	return out
}

func failures(r *run) string {
	var b strings.Builder
	for _, c := range r.report.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.Message() != "" {
				fmt.Fprintf(&b, "--- %s %s\n%s\n", cl.ID, cl.Status, cl.Message())
			}
		}
	}
	return b.String()
}

// TestMutantsAreKilled runs every mutant of the reference against the contract its spec names
// and demands that the contract fails on behaviour: a Lua mutant runs with its edited scripts
// admitted (their other SHA1 would otherwise fail every contract on the wire law alone), a Go
// mutant has no scripts to admit. Only the target contract runs, which is what "killed by its
// own contract" asks, and only up to its first failing clause (-fail-fast), the clauses that
// quote the mutant's rule first (-first, read off a pristine run's report), which keeps the
// table's cost to little more than one clause per mutant.
func TestMutantsAreKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP in -short: the mutant table runs in make mutants (every catalogue mutant against its own contract)")
	}
	type row struct {
		name, target, rule string
		lua, killed        bool
		status             verdict.Status
		note               string
		took               time.Duration
	}
	specs := mutant.Catalogue()
	quoting := clausesByRule(t, shared(t))
	rows := make([]row, len(specs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2) // 2 cores: two runs (each with its own Valkey) at a time
	for i, s := range specs {
		rows[i] = row{name: s.Name, target: s.Contract, rule: s.Rule, lua: len(s.Edits) > 0}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// A kill needs one failing clause: the run stops there (-fail-fast), one clause at a
			// time, two runs side by side.
			args := []string{"-mutant", s.Name, "-label", s.Contract, "-fail-fast", "-parallel", "1"}
			if ids := quoting[s.Rule]; len(ids) > 0 {
				args = append(args, "-first", contracts.IDPattern(ids))
			}
			if s.Cluster { // it breaks a rule only a cluster run evaluates
				args = append(args, "-cluster", "start")
			}
			if rows[i].lua {
				args = append(args, "-admit-mutant-scripts")
			}
			if s.Wire != nil { // it breaks the port binary's stdio: emq-port runs it (EMQ_MUTANT)
				args = append(args, "-port", bins["emq-port"])
			}
			start := time.Now()
			r := selftest(t, nil, args...)
			rows[i].took = time.Since(start)
			st := r.status(s.Contract)
			rows[i].status = st.Status
			rows[i].killed = r.exit == 1 && st.Status == verdict.StatusFail
			if st.Status == verdict.StatusHarnessError {
				rows[i].note = " (harness error)"
			}
		}()
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].target+rows[i].name < rows[j].target+rows[j].name })
	var b strings.Builder
	killed, lua := 0, 0
	yn := map[bool]string{true: "yes", false: "NO"}
	kind := map[bool]string{true: "Lua", false: "Go"}
	fmt.Fprintf(&b, "%-34s %-6s %-4s %-30s %-6s %-7s %s\n", "mutant", "target", "kind", "rule", "killed", "took", "target's verdict (on behaviour)")
	var total time.Duration
	for _, r := range rows {
		if r.killed {
			killed++
		}
		if r.lua {
			lua++
		}
		total += r.took
		fmt.Fprintf(&b, "%-34s %-6s %-4s %-30s %-6s %-7s %s%s\n", r.name, r.target, kind[r.lua], r.rule, yn[r.killed], r.took.Round(100*time.Millisecond), r.status, r.note)
	}
	fmt.Fprintf(&b, "killed on behaviour by their own contract: %d/%d (%d Lua with edited scripts admitted, %d Go); runs took %s in all, two at a time\n", killed, len(rows), lua, len(rows)-lua, total.Round(time.Second))
	t.Logf("mutant table:\n%s", b.String())
	for _, r := range rows {
		if !r.killed {
			t.Errorf("mutant %s survived its target %s: %s%s", r.name, r.target, r.status, r.note)
		}
	}
}
