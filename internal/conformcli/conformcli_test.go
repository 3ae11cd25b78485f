package conformcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/runner"
)

// clearEnv unsets the environment the flags default from, so that the caller's shell does not
// leak into a test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"EMQ_PORT", "EMQ_VALKEY_ADDR", "EMQ_CONFORM_CLUSTER", "EMQ_CONFORM_OUT", "EMQ_KNOWN_FAILING", "EMQ_LABEL", "EMQ_FOCUS"} {
		t.Setenv(name, "")
	}
	for _, s := range contracts.Servers() {
		t.Setenv(s.Env(), "")
	}
}

func run(t *testing.T, args ...string) (exit int, stdout, stderr string) {
	t.Helper()
	var so, se bytes.Buffer
	exit = Main("emq-conform", args, &so, &se, nil)
	return exit, so.String(), se.String()
}

// TestListReadsTheTable: -list prints every contract and its clauses in declaration order, and
// starts nothing.
func TestListReadsTheTable(t *testing.T) {
	clearEnv(t)
	exit, out, _ := run(t, "-list")
	if exit != runner.ExitCertified {
		t.Fatalf("exit %d", exit)
	}
	var listed []string
	for _, l := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(l, "  "); ok && !strings.HasPrefix(id, "  ") {
			listed = append(listed, id)
		}
	}
	if want := contracts.Clauses(false); !slices.Equal(listed, want) {
		t.Errorf("-list shows %d clauses, the table has %d (or in another order)", len(listed), len(want))
	}
	for _, c := range contracts.All() {
		if !strings.Contains(out, c.Title()+"\n    "+c.Rule+"\n") {
			t.Errorf("-list lacks %s and its rule", c.Title())
		}
	}
}

func TestVersion(t *testing.T) {
	clearEnv(t)
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	exit, out, _ := run(t, "-version")
	if want := "emq-conform " + contracts.KitVersion + " (EchoMQ conformance kit), bundle " + lua.Version + ", digest " + b.Digest() + "\n"; exit != 0 || out != want {
		t.Errorf("exit %d, %q; want 0, %q", exit, out, want)
	}
}

// TestBadInputIsAHarnessError: a bad flag or a selection that cannot run is exit 2, said in
// one line, before any server starts (no -valkey is given, so one would have to start).
func TestBadInputIsAHarnessError(t *testing.T) {
	clearEnv(t)
	known := filepath.Join(t.TempDir(), "known")
	if err := os.WriteFile(known, []byte("C04\nC10/dead/morgue-* # not a pattern\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-label", "C99"}, "-label: contracts: unknown contract id"},
		{[]string{"-focus", "no-such-clause"}, "no clause matches the selection"},
		{[]string{"-focus", "("}, "error parsing regexp"},
		{[]string{"-known-failing", known}, "-known-failing: known: not a clause-id pattern: " + known + ":2: \"C10/dead/morgue-*\""},
		{[]string{"-known-flaky", known}, "-known-flaky: known: not a clause-id pattern: " + known + ":2: "},
		{[]string{"-known-failing", filepath.Join(t.TempDir(), "absent")}, "no such file"},
		{[]string{"-parallel", "2", "-valkey", "127.0.0.1:1"}, "-parallel 2 needs 2 Valkeys: -valkey gives 1"},
		{[]string{"-parallel", "2", "-cluster", "127.0.0.1:1"}, "-parallel runs against standalone Valkeys only"},
		{[]string{"-cluster", ","}, "names no node"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		exit, _, stderr := run(t, c.args...)
		if exit != runner.ExitHarness || !strings.Contains(stderr, c.says) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line saying %q", c.args, exit, stderr, c.says)
		}
	}
}

// TestFlagsToOptions: the run the flags describe, given its servers by address (nothing
// starts).
func TestFlagsToOptions(t *testing.T) {
	clearEnv(t)
	known := filepath.Join(t.TempDir(), "known")
	if err := os.WriteFile(known, []byte("# gaps we know about\nc04   # key builder\n\nC09/retry/*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parse("emq-conform", []string{"-valkey", "127.0.0.1:7001", "-label", "c03, C09", "-focus", "walk", "-known-failing", known, "-known-flaky", known,
		"-seed", "7", "-out", "certs", "-wrong-kind", "127.0.0.1:7002"}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, cleanup, err := f.options(context.Background(), &spawner{}, nil)
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	if o.Valkey != "127.0.0.1:7001" || !slices.Equal(o.Labels, []string{"C03", "C09"}) || !slices.Equal(o.Focus, []string{"walk"}) ||
		!slices.Equal(o.KnownFailing, []string{"@" + known}) || !slices.Equal(o.KnownFlaky, []string{"@" + known}) || o.Seed != 7 || o.Out != "certs" || o.Replay != "emq-conform" || o.Factory == nil {
		t.Errorf("options %+v", o)
	}
	if len(o.Servers) != 1 || o.Servers[contracts.ServerWrongKind.Name] == nil {
		t.Errorf("servers %v, want the wrong-kind one given", o.Servers)
	}
	if addr, _, err := o.Servers[contracts.ServerWrongKind.Name](context.Background()); err != nil || addr != "127.0.0.1:7002" {
		t.Errorf("the wrong-kind server is %q (%v)", addr, err)
	}
	if o.SelfTest.Note != "" || o.SelfTest.Admit != nil {
		t.Errorf("a plain run is a self-test: %+v", o.SelfTest)
	}
}

// TestParallelFlags: -parallel N with N Valkeys gives N lanes, each with a port of its own.
func TestParallelFlags(t *testing.T) {
	clearEnv(t)
	f, err := parse("emq-conform", []string{"-parallel", "3", "-valkey", "a:1, b:2,c:3"}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, cleanup, err := f.options(context.Background(), &spawner{}, nil)
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Parallel.Valkeys, []string{"a:1", "b:2", "c:3"}) || o.Valkey != "" || o.Parallel.Port == nil {
		t.Fatalf("lanes %v, valkey %q", o.Parallel.Valkeys, o.Valkey)
	}
	p1, err1 := o.Parallel.Port()
	p2, err2 := o.Parallel.Port()
	if err1 != nil || err2 != nil || p1 == p2 || p1 == o.Factory || p1.Name() != o.Factory.Name() {
		t.Errorf("the lanes' ports: %v (%v), %v (%v); the first lane's %v", p1, err1, p2, err2, o.Factory)
	}
}

// TestAdmitScripts: -admit-scripts DIR admits the scripts of DIR that differ from the bundle's
// (and no other), with the digest of the bundle they make, and says so in every report.
func TestAdmitScripts(t *testing.T) {
	clearEnv(t)
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	claim := b.MustScript(lua.Claim)
	if err := os.WriteFile(filepath.Join(dir, lua.Claim+".lua"), []byte(claim.Source+"\n-- edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := b.MustScript(lua.Complete) // copied unchanged: not admitted
	if err := os.WriteFile(filepath.Join(dir, lua.Complete+".lua"), []byte(complete.Source), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := parse("emq-conform", []string{"-valkey", "127.0.0.1:7001", "-admit-scripts", dir}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, cleanup, err := f.options(context.Background(), &spawner{}, nil)
	defer cleanup()
	if err != nil {
		t.Fatal(err)
	}
	st := o.SelfTest
	if len(st.Admit) != 1 || st.Digest == "" || st.Digest == b.Digest() || !strings.Contains(st.Note, "not a certification") {
		t.Fatalf("self-test %+v", st)
	}
	for sha, name := range st.Admit {
		if name != lua.Claim || sha == claim.SHA1 {
			t.Errorf("admitted %s as %s", sha, name)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("port hung\nstderr:\n  a\n  last words\n"); got != "port hung … last words" {
		t.Errorf("%q", got)
	}
	if got := oneLine("just this"); got != "just this" {
		t.Errorf("%q", got)
	}
}
