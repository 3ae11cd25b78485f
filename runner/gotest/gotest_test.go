package gotest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/runner"
	"github.com/echomq/kit/runner/gotest"
)

// recorder is a testing.TB that keeps what the test was told.
type recorder struct {
	testing.TB
	failed bool
	msgs   []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...) }

// TestNotRunFailsTheTest certifies the in-process reference from this go test, the way the
// README shows, on C01 with none of the servers its refusal clauses need: the clauses that ran
// pass, and the three NOT RUN ones fail the test, each with how to give its server.
func TestNotRunFailsTheTest(t *testing.T) {
	f, err := inproc.New(inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	out := gotest.Certify(rec, runner.Options{
		Factory: f,
		Valkey:  enginestest.Valkey(t).Addr,
		Servers: gotest.ServersFromEnv(), // none given here
		Labels:  []string{"C01"},
		Out:     t.TempDir(),
	})
	if out == nil || !rec.failed {
		t.Fatalf("Certify passed a run with clauses NOT RUN: %v", rec.msgs)
	}
	msg := strings.Join(rec.msgs, "\n")
	for _, want := range []string{"wrong-kind-server-refused NOT RUN", "-wrong-kind ADDR", "old-valkey-refused NOT RUN", "cluster-valkey-refused NOT RUN"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "hello-and-fence-first") {
		t.Errorf("a clause that passed is reported:\n%s", msg)
	}
}
