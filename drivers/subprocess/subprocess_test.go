package subprocess

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// fakePort builds testdata/fakeport once per test binary run.
func fakePort(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeport")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/fakeport").CombinedOutput()
	if err != nil {
		t.Fatalf("go build fakeport: %v\n%s", err, out)
	}
	return bin
}

func session(t *testing.T, bin, mode, op string, opt Options) drivers.Driver {
	t.Helper()
	opt.Env = append(opt.Env, "FAKE_MODE="+mode, "FAKE_OP="+op)
	f, err := New(bin, opt)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	if _, err := d.Hello(context.Background(), protocol.HelloArgs{Valkey: "127.0.0.1:1"}); err != nil && op != "hello" {
		t.Fatalf("hello: %v", err)
	}
	return d
}

func portError(t *testing.T, err error, reason string) *drivers.PortError {
	t.Helper()
	var pe *drivers.PortError
	if !errors.As(err, &pe) {
		t.Fatalf("want *drivers.PortError (%s), got %T: %v", reason, err, err)
	}
	if !strings.Contains(pe.Reason, reason) {
		t.Fatalf("PortError reason %q does not say %q", pe.Reason, reason)
	}
	return pe
}

// TestMisbehavingPorts: each misbehaviour fails the session with its own reason. Only a hang
// meets the request deadline; every other case runs under a deadline no machine reaches (a
// 16 MiB line takes seconds to cross a pipe on a busy machine), so its reason, not the clock,
// decides the verdict. That the driver stops reading at the line limit is
// TestReadLineStopsAtTheLimit's, by the bytes it read.
func TestMisbehavingPorts(t *testing.T) {
	bin := fakePort(t)
	ctx := context.Background()
	const hang = 400 * time.Millisecond
	waited := "no reply to seq 2 within " + (hang + DefaultPerItem).String() // a mint of one item
	cases := []struct {
		mode, reason, line string
		stderr             bool
		deadline           time.Duration
	}{
		{"crash", "without answering seq 2 (exit status 2)", "", true, time.Minute},
		{"hang", waited, "", true, hang},
		{"hang-child", waited, "", true, hang},
		{"garbage", "not JSON", "ready to serve!", false, time.Minute},
		{"huge", "longer than 16777216 bytes (the limit); it begins", `{"seq":2,"ok":true`, false, time.Minute},
		{"outofseq", "out of sequence: expected seq 2, got 3", `"seq":3`, false, time.Minute},
		{"unknownerr", "does not match the protocol schema", "BOGUS", false, time.Minute},
		{"badresult", "result does not match the protocol schema for mint", `"ids":"JOB"`, false, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			d := session(t, bin, c.mode, "mint", Options{Deadline: c.deadline, StartDeadline: time.Minute})
			start := time.Now()
			_, err := d.Mint(ctx, protocol.MintArgs{N: 1})
			// A hang ends at its deadline, never before it; the reason names the deadline that
			// fired (the fake port would answer in an hour, so returning at all is the deadline's).
			if took := time.Since(start); c.deadline == hang && took < hang {
				t.Fatalf("the hang failed after %s, before its %s deadline", took, hang)
			}
			pe := portError(t, err, c.reason)
			if pe.Op != "mint" || pe.Port == "" {
				t.Errorf("PortError names op %q port %q", pe.Op, pe.Port)
			}
			if !strings.Contains(pe.Line, c.line) {
				t.Errorf("PortError line %q does not quote %q", pe.Line, c.line)
			}
			if c.stderr && !strings.Contains(pe.Stderr, "fakeport: got mint seq 2") {
				t.Errorf("stderr tail missing: %q", pe.Stderr)
			}
			if !groupGone(d.(*driver).cmd.Process.Pid) {
				t.Errorf("the port's process group is still alive")
			}
			// The session is over: the next op fails at once, naming the first failure.
			_, err = d.Claim(ctx, protocol.ClaimArgs{Queue: "q", LeaseMS: 100})
			portError(t, err, "the session already failed")
			if err := d.Close(ctx); err != nil {
				t.Errorf("close of a failed session: %v", err)
			}
		})
	}
}

// TestReplyAfterTheExit: a port that printed its reply and exited is read to its pipe's end,
// however late the reply reaches the kit's reader. A fixed 200 ms grace after the exit failed the
// Node port's answered close ("exited (exit status 0) without answering") on a loaded machine.
func TestReplyAfterTheExit(t *testing.T) {
	d := session(t, fakePort(t), "late-reply", "mint", Options{Deadline: time.Minute, StartDeadline: time.Minute})
	res, err := d.Mint(context.Background(), protocol.MintArgs{N: 1})
	if err != nil {
		t.Fatalf("a reply that reached the pipe after the exit was lost: %v", err)
	}
	if ids := res.IDs; len(ids) != 1 || len(ids[0]) != 1 || ids[0][0] != "JOB0000000000A" {
		t.Fatalf("mint = %v, want the late reply's one id", res)
	}
}

// TestStartDeadline: a session's first request (hello) waits the start deadline, not the
// request deadline, so an interpreter has time to come up (PROTOCOL.md Part B); later requests
// keep the short one.
func TestStartDeadline(t *testing.T) {
	// The port takes a second to come up: its hello is answered (session fails the test
	// otherwise) though the request deadline is 200ms. No later request is timed here: a reply
	// racing 200ms on a busy machine would test the machine.
	session(t, fakePort(t), "slow-start", "none", Options{Deadline: 200 * time.Millisecond, StartDeadline: time.Minute})
	// A later request's failure names the deadline it waited: its own, not the start deadline.
	d := session(t, fakePort(t), "hang", "mint", Options{Deadline: 200 * time.Millisecond, StartDeadline: time.Minute})
	_, err := d.Mint(context.Background(), protocol.MintArgs{N: 1})
	portError(t, err, "no reply to seq 2 within "+(200*time.Millisecond+DefaultPerItem).String()+" (deadline)")
}

// TestEverySessionPaysItsStartUp: a later session of the same factory (a fresh process per
// clause, B-22) gets the start deadline for its hello too (B-23): its start-up costs what the
// first one's did, and a busy machine must not turn it into a failing port.
func TestEverySessionPaysItsStartUp(t *testing.T) {
	f, err := New(fakePort(t), Options{Deadline: 200 * time.Millisecond, StartDeadline: time.Minute, Env: []string{"FAKE_MODE=slow-start", "FAKE_OP=none"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d, err := f.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Hello(context.Background(), protocol.HelloArgs{Valkey: "127.0.0.1:1"}); err != nil {
			t.Fatalf("session %d's hello after a slow start: %v", i+1, err)
		}
		d.Close(context.Background())
	}
}

func TestTwiceIsOutOfSequence(t *testing.T) {
	d := session(t, fakePort(t), "twice", "mint", Options{})
	if _, err := d.Mint(context.Background(), protocol.MintArgs{N: 1}); err != nil {
		t.Fatalf("first answer is fine: %v", err)
	}
	_, err := d.Claim(context.Background(), protocol.ClaimArgs{Queue: "q", LeaseMS: 100})
	portError(t, err, "out of sequence: expected seq 3, got 2")
}

func TestTypedErrors(t *testing.T) {
	bin := fakePort(t)
	ctx := context.Background()

	d := session(t, bin, "stale", "mint", Options{})
	_, err := d.Mint(ctx, protocol.MintArgs{N: 1})
	var ee *emqerr.Error
	if !errors.Is(err, emqerr.Stale) || !errors.As(err, &ee) || ee.Message != "token 7 is not live" {
		t.Fatalf("want EMQSTALE as *emqerr.Error, got %T %v", err, err)
	}
	if _, err := d.Mint(ctx, protocol.MintArgs{N: 1}); !errors.Is(err, emqerr.Stale) {
		t.Fatalf("a canon error does not end the session: %v", err)
	}

	d = session(t, bin, "unsupported", "mint", Options{})
	_, err = d.Mint(ctx, protocol.MintArgs{N: 1})
	var ue *drivers.UnsupportedError
	if !errors.As(err, &ue) || ue.Op != "mint" {
		t.Fatalf("want *drivers.UnsupportedError, got %T %v", err, err)
	}

	d = session(t, bin, "internal", "mint", Options{})
	_, err = d.Mint(ctx, protocol.MintArgs{N: 1})
	portError(t, err, "answered INTERNAL: lost connection")
}

func TestHappyPathAndClose(t *testing.T) {
	bin := fakePort(t)
	ctx := context.Background()
	d := session(t, bin, "", "", Options{})
	m, err := d.Mint(ctx, protocol.MintArgs{N: 1})
	if err != nil || len(m.IDs) != 1 || m.IDs[0][0] != "JOB0000000000A" {
		t.Fatalf("mint: %+v %v", m, err)
	}
	c, err := d.Claim(ctx, protocol.ClaimArgs{Queue: "q", LeaseMS: 100})
	if err != nil || c != nil {
		t.Fatalf("claim of nothing: %+v %v", c, err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	d = session(t, bin, "exit1", "close", Options{})
	portError(t, d.Close(ctx), "exited with exit status 1 after close")
}

func TestStartFailureIsAPortError(t *testing.T) {
	f, err := New("/nonexistent/port --flag", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Start(context.Background())
	portError(t, err, "could not start")
}

func TestShellOneLiners(t *testing.T) {
	ctx := context.Background()
	// A port that dies at once: hello fails cleanly, quoting stderr.
	f, err := New(`sh -c 'echo "no valkey for me" >&2; exit 7'`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Hello(ctx, protocol.HelloArgs{Valkey: "127.0.0.1:1"})
	pe := portError(t, err, "exit status 7")
	if !strings.Contains(pe.Stderr, "no valkey for me") {
		t.Errorf("stderr tail %q", pe.Stderr)
	}
	// A port that answers hello with a result missing its claims.
	f, _ = New(`sh -c 'read l; echo "{\"seq\":1,\"ok\":true,\"result\":{\"name\":\"x\"}}"; sleep 5'`, Options{})
	d, _ = f.Start(ctx)
	_, err = d.Hello(ctx, protocol.HelloArgs{Valkey: "127.0.0.1:1"})
	portError(t, err, "result does not match the protocol schema for hello")
	d.Close(ctx)
}

func TestEncodeMatchesSchema(t *testing.T) {
	v, err := newValidator()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := encode(1, "hello", protocol.HelloArgs{Valkey: "x"}); string(b) != `{"seq":1,"op":"hello","valkey":"x"}` {
		t.Errorf("encode: %s", b)
	}
	if err := check(v.requests["hello"], []byte(`{"seq":1,"op":"hello","valkey":"x","bogus":1}`)); err == nil {
		t.Error("the request schema admits an unknown field")
	}
	if err := check(v.requests["lane_ceiling"], []byte(`{"seq":1,"op":"lane_ceiling","queue":"q","lane":"g"}`)); err == nil {
		t.Error("the request schema admits lane_ceiling without its ceiling")
	}
	if err := check(v.requests["pause"], []byte(`{"seq":1,"op":"pause","queue":"q","lane":"g"}`)); err == nil {
		t.Error("the request schema admits a lane on pause")
	}
}

// TestZeroFieldsTravel drives every op through the real driver with every number at zero and
// reads back what was sent: each request matches its op's schema, and every required field is
// on the line even when it is 0 (issue 11: ceiling 0 used to be left out).
func TestZeroFieldsTravel(t *testing.T) {
	bin := fakePort(t)
	f, err := New(bin, Options{Env: []string{"FAKE_MODE=argerr-all"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := f.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if _, err := d.Hello(ctx, protocol.HelloArgs{Valkey: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	q, id := "q", "JOB0000000000A"
	fence := protocol.FenceArgs{Queue: q, ID: id}
	calls := []func() error{
		func() error { _, err := d.Mint(ctx, protocol.MintArgs{}); return err },
		func() error { _, err := d.Key(ctx, protocol.KeyArgs{Queue: q, Type: "pending"}); return err },
		func() error { _, err := d.Slot(ctx, protocol.SlotArgs{Key: "emq:{q}:pending"}); return err },
		func() error { _, err := d.Enqueue(ctx, protocol.EnqueueArgs{Queue: q}); return err },
		func() error { _, err := d.Claim(ctx, protocol.ClaimArgs{Queue: q}); return err },
		func() error { _, err := d.LaneClaim(ctx, protocol.ClaimArgs{Queue: q}); return err },
		func() error { _, err := d.Extend(ctx, protocol.ExtendArgs{FenceArgs: fence}); return err },
		func() error { return d.Complete(ctx, fence) },
		func() error { _, err := d.Retry(ctx, protocol.RetryArgs{FenceArgs: fence}); return err },
		func() error { return d.Fail(ctx, protocol.FailArgs{FenceArgs: fence}) },
		func() error { return d.Checkpoint(ctx, protocol.CheckpointArgs{FenceArgs: fence}) },
		func() error { _, err := d.Reap(ctx, protocol.ReapArgs{Queue: q}); return err },
		func() error { _, err := d.Promote(ctx, protocol.PromoteArgs{Queue: q}); return err },
		func() error { _, err := d.Morgue(ctx, protocol.MorgueArgs{Queue: q}); return err },
		func() error { _, err := d.Revive(ctx, protocol.JobArgs{Queue: q, ID: id}); return err },
		func() error { _, err := d.Purge(ctx, protocol.JobArgs{Queue: q, ID: id}); return err },
		func() error { return d.Pause(ctx, protocol.QueueArgs{Queue: q}) },
		func() error { return d.Resume(ctx, protocol.QueueArgs{Queue: q}) },
		func() error { return d.LanePause(ctx, protocol.QueueArgs{Queue: q, Lane: "g"}) },
		func() error { return d.LaneResume(ctx, protocol.QueueArgs{Queue: q, Lane: "g"}) },
		func() error { return d.LaneCeiling(ctx, protocol.QueueArgs{Queue: q, Lane: "g"}) },
		func() error { _, err := d.Park(ctx, protocol.ParkArgs{Queue: q}); return err },
		func() error { return d.Reconnect(ctx) },
	}
	for i, call := range calls {
		if err := call(); !errors.Is(err, emqerr.Arg) {
			t.Errorf("call %d: want the fake port's EMQARG, got %v (a request the schema refused?)", i, err)
		}
	}
	required := map[string][]string{
		"mint": {"n"}, "claim": {"lease_ms"}, "lane_claim": {"lease_ms"}, "extend": {"token", "lease_ms"},
		"complete": {"token"}, "retry": {"token", "max_attempts", "delay_ms", "error"}, "fail": {"token", "error"},
		"checkpoint": {"token", "data_b64"}, "reap": {"max_attempts"}, "enqueue": {"payload_b64", "delay_ms"},
		"lane_ceiling": {"lane", "ceiling"}, "park": {"consumers", "jobs", "lease_ms", "park_ms", "timeout_ms"},
	}
	seen := map[string]bool{}
	for _, l := range f.Exchange().Lines {
		req, ok := strings.CutPrefix(l, "→ ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(req), &m); err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		op := m["op"].(string)
		seen[op] = true
		if err := check(f.v.requests[op], []byte(req)); err != nil {
			t.Errorf("%s: %v", req, err)
		}
		for _, k := range required[op] {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: the required field %q is missing", req, k)
			}
		}
	}
	for op := range required {
		if !seen[op] {
			t.Errorf("no %s request was recorded", op)
		}
	}
}

func TestSplit(t *testing.T) {
	cases := map[string][]string{
		`go run ./cmd/emq-port`:       {"go", "run", "./cmd/emq-port"},
		`node  'ports/my port.js' -x`: {"node", "ports/my port.js", "-x"},
		`sh -c "echo \"hi\" there"`:   {"sh", "-c", `echo "hi" there`},
		`a\ b c`:                      {"a b", "c"},
		`x ''`:                        {"x", ""},
	}
	for in, want := range cases {
		got, err := Split(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("Split(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "  ", `a 'b`, `a "b`, `a\`} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}

// groupGone waits until no live (non-zombie) process is left in the group: a killed
// grandchild is reaped by init, not by us, so a zombie may linger. A group that survives its
// kill stays alive, so the wait is bounded only against a hang: it returns as the group goes.
func groupGone(pgid int) bool {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !groupAlive(pgid) {
			return true
		}
	}
	return !groupAlive(pgid)
}

func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold blanks, so cut after the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// TestRecorderStaysBounded: without marks the record keeps its head and its tail only.
func TestRecorderStaysBounded(t *testing.T) {
	var r recorder
	for i := 0; i < 10000; i++ {
		r.add("→ ", []byte(strconv.Itoa(i)))
	}
	ex := r.exchange()
	if len(ex.Lines) != recordHead+recordTail+1 {
		t.Fatalf("%d lines kept", len(ex.Lines))
	}
	if ex.Lines[0] != "→ 0" || ex.Lines[len(ex.Lines)-1] != "→ 9999" || !strings.Contains(ex.Lines[recordHead], "omitted") {
		t.Fatalf("head %q, cut %q, last %q", ex.Lines[0], ex.Lines[recordHead], ex.Lines[len(ex.Lines)-1])
	}
	r.mark()
	if ex := r.exchange(); len(ex.Lines) != 0 {
		t.Fatalf("after mark: %v", ex.Lines)
	}
}

// TestPrestart: with Prestart each session's process was started ahead, during the session
// before it, and is as fresh (nothing sent to it yet); Close ends the one left waiting.
func TestPrestart(t *testing.T) {
	bin := fakePort(t)
	f, err := New(bin, Options{Env: []string{"FAKE_MODE=ok"}, Prestart: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var pids []int
	for i := range 3 {
		d, err := f.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Hello(ctx, protocol.HelloArgs{Valkey: "127.0.0.1:1"}); err != nil {
			t.Fatalf("session %d: hello: %v", i, err)
		}
		pids = append(pids, d.(*driver).cmd.Process.Pid)
		if err := d.Close(ctx); err != nil {
			t.Fatalf("session %d: close: %v", i, err)
		}
	}
	if pids[0] == pids[1] || pids[1] == pids[2] {
		t.Fatalf("sessions shared a process: %v", pids)
	}
	f.mu.Lock()
	spare := f.spare
	f.mu.Unlock()
	if spare == nil || spare.ended() {
		t.Fatal("no process waits for the next session")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !spare.ended() {
		t.Error("Close left the waiting process running")
	}
}

// endless is an endless line of 'A's that counts what was read of it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'A'
	}
	e.n += len(p)
	return len(p), nil
}

// TestReadLineStopsAtTheLimit: an over-long line fails as soon as the limit is read, quoting its
// head, without reading the rest: what was read is the limit and at most one buffer more.
func TestReadLineStopsAtTheLimit(t *testing.T) {
	const limit, buf = 1 << 20, 64 << 10
	src := &endless{}
	head, err := readLine(bufio.NewReaderSize(src, buf), limit)
	if !errors.Is(err, bufio.ErrTooLong) || len(head) != quoteHead || strings.Trim(string(head), "A") != "" {
		t.Fatalf("readLine = %d bytes %q…, %v; want its %d-byte head and bufio.ErrTooLong", len(head), head[:min(len(head), 10)], err, quoteHead)
	}
	if src.n < limit || src.n > limit+buf {
		t.Fatalf("read %d bytes of an endless line for a limit of %d", src.n, limit)
	}
}
