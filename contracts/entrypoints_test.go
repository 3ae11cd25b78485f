package contracts_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/report"
)

// failingPort is a port that prints garbage for every enqueue: C03 fails on it, and -label C03
// keeps each run to a few clauses.
func failingPort(t *testing.T) []string {
	return []string{"BADPORT_CMD=" + realPort(t), "BADPORT_OP=enqueue", "BADPORT_MODE=garbage", "EMQ_LABEL=C03"}
}

var replayLine = regexp.MustCompile(`(?m)^replay: (.*)$`)

// replayAsPrinted runs a run's replay line with bash, as printed, in dir and with env (the
// port's own variables; no selection), and checks that it runs exactly the clauses that failed
// and that they fail again.
func replayAsPrinted(t *testing.T, stdout, dir string, env []string, failed []string) {
	t.Helper()
	m := replayLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no replay line:\n%s", stdout)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "-c", m[1])
	cmd.Dir = dir
	r := runCmd(t, cmd, append(env, "EMQ_CONFORM_OUT="+out), out)
	if r.exit != 1 {
		t.Fatalf("the replay line %q exited %d, want 1 (the clauses fail again)\n%s\n%s", m[1], r.exit, r.stdout, r.stderr)
	}
	var ran, bad []string
	for _, c := range r.report.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.Ran() {
				ran = append(ran, cl.ID)
			}
			if cl.Failed() {
				bad = append(bad, cl.ID)
			}
		}
	}
	if !slices.Equal(ran, failed) || !slices.Equal(bad, failed) {
		t.Errorf("the replay line %q ran %v and failed %v, want exactly %v", m[1], ran, bad, failed)
	}
}

func failedIDs(r *report.JSONReport) []string {
	var out []string
	for _, c := range r.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.Failed() {
				out = append(out, cl.ID)
			}
		}
	}
	return out
}

// TestMakeConformSaysWhatFailed: `make conform` with a failing port exits 2 (GNU make's status
// for any failed command, as README says), its last line before make's own names a failing port
// — never a harness error — and make's "Error 1" carries emq-conform's status; a port that never
// answers a hello is a harness error, said as one. The replay line it prints runs as printed
// from the checkout, where make ran.
func TestMakeConformSaysWhatFailed(t *testing.T) {
	env := failingPort(t)
	out := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "conform", "PORT="+bins["badport"], "OUT="+out)
	cmd.Dir = ".."
	cmd.Env = append(withoutEnv(os.Environ(), "EMQ_VALKEY_ADDR", "EMQ_PORT", "EMQ_LABEL", "EMQ_FOCUS", "MAKEFLAGS", "MAKELEVEL"), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("make conform with a failing port: %v, want exit 2\n%s\n%s", err, so.String(), se.String())
	}
	lines := strings.Split(strings.TrimSpace(se.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-2], "make conform: NOT CERTIFIED: the port failed") || !strings.HasSuffix(lines[len(lines)-1], "Error 1") {
		t.Errorf("make conform's last lines do not name a failing port:\n%s", se.String())
	}
	rep, err := report.ReadJSON(filepath.Join(out, "port", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	failed := failedIDs(rep)
	if len(failed) == 0 {
		t.Fatalf("no clause failed:\n%s", so.String())
	}
	replayAsPrinted(t, so.String(), "..", env[:3], failed)

	cmd = exec.Command("make", "--no-print-directory", "conform", "PORT=/nonexistent/port", "OUT="+t.TempDir())
	cmd.Dir = ".."
	cmd.Env = withoutEnv(os.Environ(), "EMQ_VALKEY_ADDR", "EMQ_PORT", "EMQ_LABEL", "EMQ_FOCUS", "MAKEFLAGS", "MAKELEVEL")
	se.Reset()
	cmd.Stderr = &se
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(se.String(), "make conform: HARNESS ERROR") || !strings.Contains(se.String(), "Error 2") {
		t.Errorf("make conform with a port that does not start: %v, want exit 2 said as a harness error\n%s", err, se.String())
	}
}

// TestCertifyScriptReplays: the replay line ci/certify-port.sh prints for a failing port runs as
// printed from the folder the script ran in, after the script has ended (its emq-conform and
// emq-engines stay in the kit's bin/).
func TestCertifyScriptReplays(t *testing.T) {
	env := failingPort(t)
	out := t.TempDir()
	r := runCmd(t, exec.Command("bash", "../ci/certify-port.sh"), append(env, "PORT_CMD="+bins["badport"], "OUT="+out), out)
	if r.exit != 1 {
		t.Fatalf("certify-port.sh with a failing port exited %d, want 1\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	kitBin, err := filepath.Abs("../bin/emq-conform")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, "replay: "+kitBin+" -port ") {
		t.Errorf("the replay line does not name the kit's bin/emq-conform by its path:\n%s", r.stdout)
	}
	replayAsPrinted(t, r.stdout, ".", env[:3], failedIDs(r.report))
}
