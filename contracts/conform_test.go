package contracts_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/internal/tempdir"
)

var update = flag.Bool("update", false, "rewrite the frozen conformance transcripts from a fresh run")

// scratch is TestMain's folder: the binaries, and the certification folders of the shared runs,
// which outlive the test that made them.
var scratch string

// bins holds the binaries TestMain builds: emq-conform, emq-selftest (emq-conform with the
// kit's -mutant flags), badport, and emq-port when it exists.
var bins = map[string]string{}

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := tempdir.New("", "emq-conform-test-", "emq-conform-test-")
	scratch = dir
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		for name, pkg := range map[string]string{
			"emq-conform":  "./cmd/emq-conform",
			"emq-selftest": "./cmd/emq-selftest",
			"badport":      "./contracts/testdata/badport",
			"emq-port":     "./cmd/emq-port",
			"emq-engines":  "./cmd/emq-engines", // beside emq-conform, which runs it for its servers
		} {
			if _, err := os.Stat(filepath.Join("..", pkg)); err != nil {
				continue
			}
			bin := filepath.Join(dir, name)
			cmd := exec.Command("go", "build", "-o", bin, pkg)
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
				return 2
			}
			bins[name] = bin
		}
		return m.Run()
	}()
	os.Exit(code)
}

// run is one emq-conform run.
type run struct {
	exit       int
	stdout     string
	stderr     string
	report     *report.JSONReport
	transcript string
	dir        string // the certification folder
}

func (r *run) status(id string) verdict.ContractResult {
	for _, c := range r.report.Result.Contracts {
		if c.ID == id {
			return c
		}
	}
	return verdict.ContractResult{}
}

// conform runs the emq-conform binary with its own Valkey (never a shared one: every clause
// FLUSHALLs), into a fresh certification folder.
func conform(t *testing.T, env []string, args ...string) *run {
	t.Helper()
	return runBin(t, "emq-conform", env, args...)
}

// sharedRuns are the runs several tests read (the reference in-process, and on a cluster, the
// Node port through ci/certify-port.sh, a mutant's), each made once per test binary.
var sharedRuns = struct {
	sync.Mutex
	m map[string]*run
}{m: map[string]*run{}}

// once is the run make makes, made once per test binary under key for every test that reads it;
// make writes its certification folder into the folder it is given, which lasts as long as the
// test binary.
func once(t *testing.T, key string, make func(out string) *run) *run {
	t.Helper()
	sharedRuns.Lock()
	defer sharedRuns.Unlock()
	if r, ok := sharedRuns.m[key]; ok {
		return r
	}
	out, err := os.MkdirTemp(scratch, "run-")
	if err != nil {
		t.Fatal(err)
	}
	r := make(out)
	sharedRuns.m[key] = r
	return r
}

// shared is conform(t, nil, args...) made once per test binary for every test that reads it.
func shared(t *testing.T, args ...string) *run {
	t.Helper()
	return once(t, "emq-conform "+strings.Join(args, " "), func(out string) *run {
		return runCmd(t, exec.Command(bins["emq-conform"], append([]string{"-out", out}, args...)...), nil, out)
	})
}

// nodeCertified is the Node port certified by ci/certify-port.sh, once per test binary.
func nodeCertified(t *testing.T) *run {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the Node port cannot be certified here (install Node.js 20)")
	}
	return once(t, "certify-port.sh node", func(out string) *run {
		return runCmd(t, exec.Command("bash", "../ci/certify-port.sh"), []string{"PORT_CMD=node ../ports/node/port.js", "OUT=" + out}, out)
	})
}

// selftest runs emq-selftest, emq-conform with the kit's -mutant flags, the same way.
func selftest(t *testing.T, env []string, args ...string) *run {
	t.Helper()
	return runBin(t, "emq-selftest", env, args...)
}

func runBin(t *testing.T, bin string, env []string, args ...string) *run {
	t.Helper()
	out := t.TempDir()
	return runCmd(t, exec.Command(bins[bin], append([]string{"-out", out}, args...)...), env, out)
}

// mutantRun is a failing certification: the reference with the Lua mutant complete-any-token
// (its edited script admitted) on C07 and C08, once per test binary.
func mutantRun(t *testing.T) *run {
	t.Helper()
	return once(t, "emq-selftest complete-any-token", func(out string) *run {
		return runCmd(t, exec.Command(bins["emq-selftest"], "-out", out, "-mutant", "complete-any-token", "-admit-mutant-scripts", "-label", "C07,C08"), nil, out)
	})
}

// runCmd runs cmd with the environment less the kit's own variables plus env, and reads the
// certification folder out.
func runCmd(t *testing.T, cmd *exec.Cmd, env []string, out string) *run {
	t.Helper()
	bin := filepath.Base(cmd.Path)
	cmd.Env = append(withoutEnv(os.Environ(), "EMQ_VALKEY_ADDR", "EMQ_MUTANT", "EMQ_PORT", "EMQ_LABEL", "EMQ_FOCUS", "EMQ_CONFORM_CLUSTER",
		"EMQ_CONFORM_OUT", "EMQ_KNOWN_FAILING", "EMQ_KNOWN_FLAKY", "EMQ_WRONG_KIND_ADDR", "EMQ_VALKEY80_ADDR", "EMQ_CLUSTER_NODE_ADDR", "EMQ_STANDALONE_VALKEY_ADDR"), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := &run{stdout: so.String(), stderr: se.String(), dir: out}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	if r.report, err = report.ReadJSON(filepath.Join(out, "report.json")); err != nil {
		t.Fatalf("no report (exit %d): %v\nstdout:\n%s\nstderr:\n%s", r.exit, err, r.stdout, r.stderr)
	}
	ts, _ := filepath.Glob(filepath.Join(out, "conformance-*.out"))
	if len(ts) != 1 {
		t.Fatalf("want one transcript in %s, got %v", out, ts)
	}
	b, _ := os.ReadFile(ts[0])
	r.transcript = string(b)
	for _, f := range []string{"junit.xml", "report.html", "facts.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("certification folder lacks %s", f)
		}
	}
	return r
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// realPort is a working port command to wrap: the Go reference's port binary, else the Node port.
func realPort(t *testing.T) string {
	if b := bins["emq-port"]; b != "" {
		return b
	}
	if _, err := exec.LookPath("node"); err == nil {
		if abs, err := filepath.Abs("../ports/node/port.js"); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return "node " + abs
			}
		}
	}
	t.Skip("no port binary to wrap: neither cmd/emq-port nor node + ports/node")
	return ""
}

// TestRequestsRunAheadFail: a port that answers requests in flight in order but serves one
// before the request written ahead of it (badport's ahead: the complete behind the first claim
// runs first) fails the in-flight clause under its own rule, not as a conversation fault.
func TestRequestsRunAheadFail(t *testing.T) {
	port := realPort(t)
	r := conform(t, []string{"BADPORT_CMD=" + port, "BADPORT_OP=claim", "BADPORT_MODE=ahead"},
		"-port", bins["badport"], "-label", "C01", "-focus", "^C01/fence/requests-in-flight-served-in-order$")
	if r.exit != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, cl := range r.status("C01").Clauses {
		if cl.ID != "C01/fence/requests-in-flight-served-in-order" {
			continue
		}
		if cl.Status != verdict.StatusFail || len(cl.Failures) == 0 || cl.Failures[0].Rule != "in-flight" {
			t.Fatalf("%s is %s, want FAIL under the rule in-flight:\n%s", cl.ID, cl.Status, r.stdout)
		}
		if !strings.Contains(cl.Message(), "complete") {
			t.Errorf("the failure does not name the complete that ran ahead:\n%s", cl.Message())
		}
		return
	}
	t.Fatalf("no requests-in-flight clause in the report:\n%s", r.stdout)
}

// TestMisbehavingPortFailsCleanly: a port that crashes, hangs or prints garbage mid-suite gets
// a FAIL report (exit 1) within the deadlines, never a hang or a harness error. The request
// deadline stays a long one (10 s, the default), which the port's real work (a mint of 100000
// ids, the contracts that must pass) meets on a busy machine: a 700 ms one failed them
// (issue 29). The hang meets it once: one C09 clause runs beside C02, and its failure names
// the deadline.
func TestMisbehavingPortFailsCleanly(t *testing.T) {
	port := realPort(t)
	cases := []struct {
		mode, op, label, focus, reason string
		fail, pass                     []string
	}{
		{"crash", "claim", "C02,C06,C07", "", "without answering", []string{"C06", "C07"}, []string{"C02"}}, // C01 claims too (requests in flight)
		{"hang", "retry", "C09,C02", "^(C09/retry/backoff-parks-in-scheduled|C02/.*)$", "within 10s (deadline)", []string{"C09"}, []string{"C02"}},
		{"garbage", "reap", "C11", "", "not JSON", []string{"C11"}, nil},
		{"count", "*", "C01,C02", "", "out of sequence", []string{"C01"}, []string{"C02"}},
		// Requests in flight (B-280): the park's reply printed after the slot's written behind it.
		{"swap", "park", "C01", "^C01/fence/requests-in-flight-served-in-order$", "out of sequence", []string{"C01"}, nil},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			args := []string{"-port", bins["badport"], "-deadline", "10s", "-label", c.label}
			if c.focus != "" {
				args = append(args, "-focus", c.focus)
			}
			r := conform(t, []string{"BADPORT_CMD=" + port, "BADPORT_OP=" + c.op, "BADPORT_MODE=" + c.mode}, args...)
			if r.exit != 1 {
				t.Fatalf("exit %d, want 1 (a port's misbehaviour is a failure)\n%s\n%s", r.exit, r.stdout, r.stderr)
			}
			for _, id := range c.fail {
				s := r.status(id)
				if s.Status != verdict.StatusFail {
					t.Errorf("%s is %s, want FAIL", id, s.Status)
					continue
				}
				found := false
				for _, cl := range s.Clauses {
					found = found || (strings.Contains(cl.Message(), c.reason) && strings.Contains(cl.Message(), "badport: sabotaging "+strings.TrimPrefix(c.op, "*")))
					// A conversation fault is reported under the port protocol's rule (B-21), never
					// under the rule of the op the clause was checking.
					if cl.Status == verdict.StatusFail && (len(cl.Failures) == 0 || cl.Failures[0].Rule != "port-protocol") {
						t.Errorf("%s fails under %q, want the port protocol's rule port-protocol:\n%s", cl.ID, cl.Rule(), cl.Message())
					}
				}
				if !found {
					t.Errorf("%s: no clause's failure says %q with the port's stderr tail", id, c.reason)
				}
			}
			for _, id := range c.pass {
				if s := r.status(id); s.Status != verdict.StatusPass {
					t.Errorf("%s is %s, want PASS (it never sends %s)", id, s.Status, c.op)
				}
			}
			if !strings.Contains(r.stdout, "CONFORMANCE ") {
				t.Errorf("no summary line:\n%s", r.stdout)
			}
			// Each contract's line once, whatever order its clauses ran in.
			seen := map[string]int{}
			for _, l := range strings.Split(r.stdout, "\n") {
				if id, _, ok := strings.Cut(l, " "); ok && len(id) == 3 && id[0] == 'C' && strings.Contains(l, " ....") {
					if seen[id]++; seen[id] == 2 {
						t.Errorf("the console shows %s twice:\n%s", id, r.stdout)
					}
				}
			}
			if !strings.Contains(r.stdout, "FAILED: ") || !strings.Contains(r.stdout, "replay: "+bins["emq-conform"]+" -port ") {
				t.Errorf("no failed ids by rule or no replay line before the verdict:\n%s", r.stdout)
			}
		})
	}
}

// TestSessionsPerClause: the kit starts a fresh port process for every clause, and each
// session's first request is hello (PROTOCOL.md Part B) — counted by the badport's log.
func TestSessionsPerClause(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sessions")
	r := conform(t, []string{"BADPORT_CMD=" + realPort(t), "BADPORT_LOG=" + log}, "-port", bins["badport"], "-label", "C03")
	c := r.status("C03")
	if c.Status != verdict.StatusPass {
		t.Fatalf("C03 %s\n%s", c.Status, r.stdout)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	firsts := strings.Fields(string(b))
	if len(firsts) < c.ClausesRun {
		t.Errorf("%d sessions for %d clauses: want a fresh port per clause", len(firsts), c.ClausesRun)
	}
	for i, op := range firsts {
		if op != "hello" {
			t.Errorf("session %d began with %q, not hello", i+1, op)
		}
	}
}

// TestVerdicts covers the statuses and exit codes beyond PASS and FAIL: an unclaimed contract,
// clauses not offered, a known-failing list (honoured, and stale), and a harness that cannot run.
func TestVerdicts(t *testing.T) {
	port := realPort(t)
	// The clauses the mutant lax-queue-name fails, as a port under construction lists them:
	// exact ids and a pattern.
	list := func(name, text string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	known := list("known-failing", "# gaps we know about\nC04/kind/refusal-order\nC04/kind/fields   # the fields clause\n"+
		"C04/kind/bad-queue-name-refused\nC04/kind/bad-lane-name-refused\nC04/kind/bad-queue-refused-by-every-op\nC04/kind/bad-lane-refused-by-every-op\n")
	t.Run("not-claimed", func(t *testing.T) {
		r := conform(t, []string{"BADPORT_CMD=" + port, "BADPORT_CLAIMS=C01"}, "-port", bins["badport"], "-label", "C01,C02")
		if r.exit != 1 || r.status("C01").Status != verdict.StatusPass || r.status("C02").Status != verdict.StatusNotClaimed {
			t.Fatalf("exit %d, C01 %s, C02 %s; want 1, PASS, NOT CLAIMED\n%s", r.exit, r.status("C01").Status, r.status("C02").Status, r.stdout)
		}
		if !strings.Contains(r.stdout, "C02 mint") || !strings.Contains(r.stdout, "NOT CLAIMED") {
			t.Errorf("console:\n%s", r.stdout)
		}
	})
	t.Run("not-offered", func(t *testing.T) {
		// A port without the clock aid: its clock clauses are NOT RUN (not offered), and C05
		// still passes (canon §7, PROTOCOL.md Part B Capabilities).
		r := conform(t, []string{"BADPORT_CMD=" + port, "BADPORT_HIDE_CAPS=clock"}, "-port", bins["badport"], "-label", "C05")
		c := r.status("C05")
		offered := 0
		for _, cl := range c.Clauses {
			if cl.Status == verdict.StatusNotOffered {
				offered++
			}
		}
		if c.Status != verdict.StatusPass || c.Partial() || offered < 3 {
			t.Fatalf("C05 %s (partial %v), %d clauses not offered; want PASS, not partial, the clock clauses not offered\n%s", c.Status, c.Partial(), offered, r.stdout)
		}
	})
	t.Run("known-failing", func(t *testing.T) {
		// A Go mutant fails only its own contract: an edited script fails every contract that
		// runs it on the wire law. Its failed clauses are listed: KNOWN FAILING, exit 0, shown
		// apart from the failures, not a certification.
		r := selftest(t, nil, "-mutant", "lax-queue-name", "-known-failing", known)
		if r.exit != 0 || r.status("C04").Status != verdict.StatusKnownFailing || r.report.Result.Certified {
			t.Fatalf("exit %d, C04 %s, certified %v; want 0, KNOWN FAILING, false\n%s", r.exit, r.status("C04").Status, r.report.Result.Certified, r.stdout)
		}
		if !strings.Contains(r.stdout, "CONFORMANCE 13/14") || !strings.Contains(r.stdout, "--- C04/kind/fields KNOWN FAILING") || strings.Contains(r.stdout, "FAILED: ") {
			t.Errorf("console:\n%s", r.stdout)
		}
		if r.report.Counts.KnownFailing != 6 || r.report.Counts.Fail != 0 {
			t.Errorf("report.json counts %+v, want 6 known failing, none failed", r.report.Counts)
		}
	})
	t.Run("known-flaky", func(t *testing.T) {
		// A pattern for the whole contract as flaky: its failures do not fail the run, its passes
		// are passes (a flaky entry is never stale for passing).
		r := selftest(t, nil, "-mutant", "lax-queue-name", "-label", "C04", "-known-flaky", list("known-flaky", "C04/**\n"))
		if r.exit != 0 || r.status("C04").Status != verdict.StatusKnownFlaky || len(r.report.Result.Stale) > 0 {
			t.Fatalf("exit %d, C04 %s, stale %v; want 0, KNOWN FLAKY, none\n%s", r.exit, r.status("C04").Status, r.report.Result.Stale, r.stdout)
		}
	})
	t.Run("stale-known-failing", func(t *testing.T) {
		// The clean reference passes what the list says fails: every such clause is a stale entry,
		// said on the console, in JUnit and report.json, and the run fails; so does a pattern
		// that matches no clause, said before the run too.
		stale := list("stale", "C04/kind/fields\nC04/kind/no-such-clause\n")
		r := conform(t, nil, "-known-failing", stale, "-label", "C04")
		if r.exit != 1 || len(r.report.Result.Stale) != 2 {
			t.Fatalf("exit %d, stale %v; want 1 and two stale entries\n%s", r.exit, r.report.Result.Stale, r.stdout)
		}
		for _, want := range []string{"STALE KNOWN LISTS", "C04/kind/fields is listed as known failing but passed", `"C04/kind/no-such-clause" (` + stale + ":2) matches no clause"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the console lacks %q:\n%s", want, r.stdout)
			}
		}
		if !strings.Contains(r.stderr, "no-such-clause") {
			t.Errorf("the pattern that matches nothing is not said before the run:\n%s", r.stderr)
		}
		if junit, _ := os.ReadFile(filepath.Join(r.dir, "junit.xml")); !bytes.Contains(junit, []byte(`<failure message="stale entry: C04/kind/fields is listed`)) {
			t.Errorf("junit.xml does not fail the stale entry:\n%s", junit)
		}
	})
	t.Run("bad-pattern", func(t *testing.T) {
		cmd := exec.Command(bins["emq-conform"], "-known-failing", list("bad", "C04/kind/bad-*\n"), "-label", "C04")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var ee *exec.ExitError
		if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "a * stands for a whole component") {
			t.Errorf("a line that is not a pattern: %v, want exit 2 saying why\n%s", err, stderr.String())
		}
	})
	t.Run("fail-fast", func(t *testing.T) {
		// A mutation test stops at its first failing clause, serial or parallel, and is never a
		// certification; with nothing failing it exits 0 and still says it certified nothing.
		// The lanes are given: each clause in flight when the first fails may fail too, so the
		// bound on failures is the lane count (the default's depends on the machine). A contract
		// the mutant fails runs first: a stop is seen without running the rest.
		for _, extra := range [][]string{{"-first", "^C07/", "-parallel", "1"}, {"-first", "^C07/", "-parallel", "2"}} {
			r := selftest(t, nil, append([]string{"-mutant", "complete-any-token", "-admit-mutant-scripts", "-fail-fast"}, extra...)...)
			failed := 0
			for _, c := range r.report.Result.Contracts {
				for _, cl := range c.Clauses {
					if cl.Failed() {
						failed++
					}
				}
			}
			res := r.report.Result
			lanes, _ := strconv.Atoi(extra[slices.Index(extra, "-parallel")+1])
			if r.exit != 1 || failed == 0 || failed > lanes || res.Certified || !res.FailFast || res.ClausesRun >= res.ClausesTotal {
				t.Fatalf("%v: exit %d, %d failed, certified %v, %d of %d run; want 1, one failure (at most one per lane, %d), not certified, fewer run\n%s",
					extra, r.exit, failed, res.Certified, res.ClausesRun, res.ClausesTotal, lanes, r.stdout)
			}
			if !strings.Contains(r.stdout, "fail-fast run") || !strings.Contains(r.stdout, "not a certification") {
				t.Errorf("%v: console:\n%s", extra, r.stdout)
			}
		}
		r := conform(t, nil, "-fail-fast", "-label", "C03")
		if r.exit != 0 || r.report.Result.Certified || !strings.Contains(r.stdout, "not a certification") {
			t.Fatalf("exit %d, certified %v; want 0, not certified\n%s", r.exit, r.report.Result.Certified, r.stdout)
		}
	})
	t.Run("close-after-hello", func(t *testing.T) {
		// A port that answers hello but stays after close is a failing port (B-24), not a
		// harness error: the run goes on and the clauses fail on their close.
		r := conform(t, []string{"BADPORT_CMD=" + port, "BADPORT_OP=close", "BADPORT_MODE=linger"}, "-port", bins["badport"], "-label", "C03", "-deadline", "2s")
		if r.exit != 1 || r.status("C03").Status != verdict.StatusFail {
			t.Fatalf("exit %d, C03 %s; want 1, FAIL\nstdout:\n%s\nstderr:\n%s", r.exit, r.status("C03").Status, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "did not end cleanly") {
			t.Errorf("stderr does not say the probe's close failed:\n%s", r.stderr)
		}
	})
	t.Run("harness-error", func(t *testing.T) {
		// A bad flag, no Valkey, a selection of nothing, a port that never completes a hello: each
		// is exit 2, said in one line, without waiting anything out: a port's hello is waited for
		// once (one session said hello a run, by the badport's log), and no run takes the minute
		// of the runner's wait for its server or of the default start deadline (what a retried
		// dial or a mute port taken for a slow one would cost). A tighter bound would time the
		// machine.
		hellos, ports := filepath.Join(t.TempDir(), "hellos"), 0
		hang := []string{"BADPORT_CMD=" + port, "BADPORT_OP=hello", "BADPORT_MODE=hang", "BADPORT_LOG=" + hellos}
		for _, c := range []struct {
			env  []string
			args []string
		}{
			{nil, []string{"-valkey", "127.0.0.1:1"}}, {nil, []string{"-label", "C99"}}, {nil, []string{"-nonsense"}},
			{nil, []string{"-focus", "no-such-clause"}},
			{hang, []string{"-port", bins["badport"], "-deadline", "1s", "-start-deadline", "1s"}},
			// A mute port (it read its hello, then sat idle) is told from a slow start within
			// seconds, under the default 60 s start deadline.
			{hang, []string{"-port", bins["badport"]}},
		} {
			if c.env != nil {
				ports++
			}
			cmd := exec.Command(bins["emq-conform"], append([]string{"-out", t.TempDir()}, c.args...)...)
			cmd.Env = append(os.Environ(), c.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("%v: %v, want exit 2\n%s", c.args, err, stderr.String())
			}
			if took := time.Since(start); took >= time.Minute {
				t.Errorf("%v: exit 2 took %s, a wait of the runner's own waited out", c.args, took)
			}
			if len(c.args) == 2 && c.args[0] == "-port" && !strings.Contains(stderr.String(), "a mute port") {
				t.Errorf("%v: the mute port is not named as one:\n%s", c.args, stderr.String())
			}
			if l := strings.TrimSpace(stderr.String()); c.args[0] != "-nonsense" && strings.Count(l, "\n") > 0 {
				t.Errorf("%v: the harness error is not one line:\n%s", c.args, l)
			}
		}
		if b, err := os.ReadFile(hellos); err != nil || len(strings.Fields(string(b))) != ports {
			t.Errorf("%d runs of a port that never answers hello sent %q (%v): want one hello a run", ports, b, err)
		}
	})
}

// TestTempFoldersRemoved: emq-conform alone (no emq-engines beside it or on PATH) builds the
// kit's emq-engines into a temporary folder for its servers, and removes it whether the run
// ends certified or as a harness error.
func TestTempFoldersRemoved(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "emq-conform")
	b, err := os.ReadFile(bins["emq-conform"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	port := realPort(t)
	for _, c := range []struct {
		exit int
		env  []string
		args []string
	}{
		{0, nil, []string{"-label", "C03"}},
		{2, []string{"BADPORT_CMD=" + port, "BADPORT_OP=hello", "BADPORT_MODE=hang"}, []string{"-port", bins["badport"], "-deadline", "1s", "-start-deadline", "1s"}},
	} {
		tmp := t.TempDir()
		cmd := exec.Command(alone, append([]string{"-out", t.TempDir()}, c.args...)...)
		cmd.Dir = ".." // the checkout: emq-engines can be built here
		cmd.Env = append(withoutEnv(os.Environ(), "EMQ_VALKEY_ADDR", "TMPDIR"), append(c.env, "TMPDIR="+tmp)...)
		out, err := cmd.CombinedOutput()
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got != c.exit {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, got, c.exit, out)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%v: the run left %v in its temporary directory", c.args, left)
		}
	}
}
