package contracts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/verdict"
)

const wallClause = "C02/mint/lease-lost-across-a-wall-step"

// inProcessNotOffered are the clauses the in-process reference cannot run: they set the port's
// wall clock, which for a port in the kit's own process is the kit's, or end its standard
// input, which it does not have. The tests that read the
// reference's run take them as NOT RUN (not offered) there, and the Node port's run for their
// trace.
var inProcessNotOffered = map[string]bool{wallClause: true, inputCutClause: true}

// inputCutClause ends a subprocess port's standard input inside a line; a port in the kit's own
// process has none.
const inputCutClause = "C01/fence/input-ended-inside-a-line"

// TestWallTimedLeaseFails proves lease-lost-across-a-wall-step on the defect it is for, which no
// Go mutant can carry (libfaketime does not move a static Go binary's clock): a copy of the Node
// port whose minter times its lease on the wall clock (Date.now) instead of the monotonic one
// fails it, under the rule lease-own-clock. The pristine port's pass is in its frozen
// transcript (TestNodePort); a Go port is not moved, and the clause says so, NOT RUN (not
// offered), instead of passing.
func TestWallTimedLeaseFails(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the Node port cannot run here (install Node.js 20)")
	}
	lua, err := filepath.Abs("../lua")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "node")
	if out, err := exec.Command("cp", "-r", "../ports/node", dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the Node port: %v\n%s", err, out)
	}
	minter := filepath.Join(dir, "lib", "minter.js")
	b, err := os.ReadFile(minter)
	if err != nil {
		t.Fatal(err)
	}
	const monotonic, wall = "mono = monotonicMs,", "mono = Date.now,"
	if strings.Count(string(b), monotonic) != 1 {
		t.Fatalf("ports/node/lib/minter.js no longer defaults its lease clock with %q: edit this test to the new line", monotonic)
	}
	if err := os.WriteFile(minter, []byte(strings.Replace(string(b), monotonic, wall, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := conform(t, []string{"EMQ_LUA_DIR=" + lua}, "-port", "node "+filepath.Join(dir, "port.js"), "-focus", "^"+wallClause+"$")
	cl := clauseOf(t, r, wallClause)
	if r.exit != 1 || cl.Status != verdict.StatusFail || len(cl.Failures) == 0 || cl.Failures[0].Rule != "lease-own-clock" {
		t.Fatalf("a Node port timing its lease on the wall clock: exit %d, %s %v, want exit 1 and FAIL under lease-own-clock\n%s", r.exit, cl.Status, cl.Failures, r.stdout)
	}

	r = conform(t, nil, "-port", bins["emq-port"], "-focus", "^"+wallClause+"$")
	cl = clauseOf(t, r, wallClause)
	if cl.Status != verdict.StatusNotOffered || !strings.Contains(cl.Reason, "past the C library") {
		t.Fatalf("emq-port (a static Go binary): %s %q, want NOT RUN (not offered), saying its clock is read past the C library\n%s", cl.Status, cl.Reason, r.stdout)
	}
}

// clauseOf is the clause id of a run's report.
func clauseOf(t *testing.T, r *run, id string) verdict.Clause {
	t.Helper()
	for _, c := range r.report.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.ID == id {
				return cl
			}
		}
	}
	t.Fatalf("no clause %s in the report:\n%s", id, r.stdout)
	return verdict.Clause{}
}
