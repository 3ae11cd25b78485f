package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// addr is the package's shared Valkey 8.1.1; tests isolate themselves by queue name. Tests that
// change deployment-wide state (the bundle fence) start their own server.
var addr string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start Valkey:", err)
		os.Exit(1)
	}
	addr = v.Addr
	code := m.Run()
	if err := v.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop Valkey:", err)
	}
	os.Exit(code)
}

var queueSeq atomic.Int64

// qname is a queue name no other test uses.
func qname(t testing.TB) string {
	return "t" + strconv.FormatInt(queueSeq.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
}

// ctxT is a test's context, cancelled when it ends. It has no deadline: a deadline would bound
// the test's work by the clock (a drain of thousands of jobs, a monitor reading to the end), and
// a hang is the go test -timeout's to report, with every goroutine's stack.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func openBus(t testing.TB, at string, opt bus.Options) *bus.Bus {
	t.Helper()
	b, err := bus.Open(ctxT(t), at, opt)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// inspector is the test's own connection, without the fence: it reads what the bus wrote.
type inspector struct {
	t testing.TB
	c *connector.Conn
}

func inspect(t testing.TB, at string) *inspector {
	t.Helper()
	c, err := connector.Dial(ctxT(t), at, connector.Options{})
	if err != nil {
		t.Fatalf("inspector dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &inspector{t, c}
}

func (in *inspector) do(args ...any) resp.Value {
	in.t.Helper()
	v, err := in.c.Do(context.Background(), args...)
	if err != nil {
		in.t.Fatalf("%v: %v", args, err)
	}
	return v
}

func (in *inspector) hash(key string) map[string]string {
	in.t.Helper()
	v := in.do("HGETALL", key)
	m := map[string]string{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[string(v.Elems[i].Str)] = string(v.Elems[i+1].Str)
	}
	return m
}

func (in *inspector) strs(args ...any) []string {
	in.t.Helper()
	v := in.do(args...)
	out := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		out[i] = string(e.Str)
	}
	return out
}

func (in *inspector) int(args ...any) int64 {
	in.t.Helper()
	n, err := in.do(args...).Int64()
	if err != nil {
		in.t.Fatalf("%v: %v", args, err)
	}
	return n
}

// now is the server's clock in ms, the clock every lease is judged by.
func (in *inspector) now() int64 {
	in.t.Helper()
	v := in.do("TIME")
	s, _ := strconv.ParseInt(string(v.Elems[0].Str), 10, 64)
	us, _ := strconv.ParseInt(string(v.Elems[1].Str), 10, 64)
	return s*1000 + us/1000
}

// waitServerPast waits until the server's clock is past ms (a lease deadline or a due time),
// sleeping in small steps: the server's clock decides, not the test's.
func (in *inspector) waitServerPast(ms int64) {
	in.t.Helper()
	await.Until(in.t, fmt.Sprintf("the server clock past %d", ms), func() bool { return in.now() > ms })
}

// beforeDue runs a scenario whose checks must run before a server-clock instant (a due time, a
// lease's end) that is window after its start: try returns false when the checks ran too late to
// tell (the server's clock had passed the instant), and the scenario runs again with a window
// four times longer. A busy machine costs tries, never a red test; six in a row (80 ms grown to
// 82 s) would be a machine that no longer runs.
func beforeDue(t *testing.T, window time.Duration, try func(window time.Duration) bool) {
	t.Helper()
	for range 6 {
		if try(window) {
			return
		}
		t.Logf("the checks outlasted a window of %s on this machine: again with %s", window, 4*window)
		window *= 4
	}
	t.Fatalf("the checks never ran within their window, the last %s", window/4)
}

// isSentinel tells the MONITOR line of ECHO s, a sentinel a test sends after the commands it
// counts: the server prints commands in the order it runs them, so a reader that has met the
// sentinel has met everything run before it.
func isSentinel(ml connector.MonitorLine, s string) bool {
	return len(ml.Args) == 2 && strings.EqualFold(ml.Args[0], "ECHO") && ml.Args[1] == s
}

func (in *inspector) score(key, member string) int64 {
	in.t.Helper()
	v := in.do("ZSCORE", key, member)
	if v.Null {
		in.t.Fatalf("%s has no %s", key, member)
	}
	f, err := strconv.ParseFloat(string(v.Str), 64)
	if err != nil {
		in.t.Fatal(err)
	}
	return int64(f)
}

// queueKeys lists every key of queue q on the server.
func (in *inspector) queueKeys(q string) []string {
	in.t.Helper()
	return in.scan("emq:{" + q + "}:*")
}

// residue lists queue q's keys other than its wake flag: what a settled job leaves behind.
func (in *inspector) residue(q string) []string {
	in.t.Helper()
	var out []string
	for _, k := range in.queueKeys(q) {
		if k != "emq:{"+q+"}:wake" {
			out = append(out, k)
		}
	}
	return out
}

func (in *inspector) scan(match string) []string {
	in.t.Helper()
	var out []string
	cursor := "0"
	for {
		v := in.do("SCAN", cursor, "MATCH", match, "COUNT", 1000)
		cursor = string(v.Elems[0].Str)
		for _, k := range v.Elems[1].Elems {
			out = append(out, string(k.Str))
		}
		if cursor == "0" {
			return out
		}
	}
}

// grammarOnly fails the test for any key on the server outside the closed grammar.
func (in *inspector) grammarOnly() {
	in.t.Helper()
	for _, k := range in.scan("*") {
		if _, err := keys.Parse(k); err != nil {
			in.t.Errorf("key outside the grammar: %q: %v", k, err)
		}
	}
}

// leaveNoForeignKeys registers the keyspace check to run when the test ends.
func leaveNoForeignKeys(t *testing.T, in *inspector) {
	t.Cleanup(in.grammarOnly)
}

func mustType(t testing.TB, err error, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}
