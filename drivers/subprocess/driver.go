package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// line is one line of the port's stdout, or the reason reading stopped.
type line struct {
	text []byte
	err  error // io.EOF at the end, bufio.ErrTooLong for an over-long line
}

// driver is one running port process.
type driver struct {
	f      *Factory
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan line
	exited chan struct{} // closed when the process has been reaped
	stderr *tail
	errEOF chan struct{} // closed when stderr reached EOF

	waitErr  error // valid after exited is closed
	seq      uint64
	largest  int                // the longest line the session has sent, in bytes (B-20's allowance)
	failed   *drivers.PortError // set on the first protocol-level failure: the session is over
	closed   bool
	inputEnd atomic.Bool // EndInput closed stdin: Close only reaps
	closeIn  atomic.Bool // a pipeline wrote a close: an end of input after it is no B-286 end
	// closeSent: a close sent raw (Raw) was answered; Close only waits for the exit.
	closeSent bool
	mu        sync.Mutex // guards kill vs. reap
	wmu       sync.Mutex // a request's write vs. EndInput's close of stdin: the close waits for it
}

func start(cmd *exec.Cmd, f *Factory) (*driver, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, p := range []*os.File{inR, inW, outR, outW, errR, errW} {
			p.Close()
		}
		return nil, err
	}
	// The child holds its own copies; closing ours lets EOF arrive when it exits.
	inR.Close()
	outW.Close()
	errW.Close()

	d := &driver{
		f: f, cmd: cmd, stdin: inW,
		lines:  make(chan line, 16),
		exited: make(chan struct{}),
		stderr: &tail{max: f.opt.StderrTail},
		errEOF: make(chan struct{}),
	}
	go d.readStdout(outR)
	go func() {
		_, _ = io.Copy(d.stderr, errR)
		errR.Close()
		close(d.errEOF)
	}()
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

func (d *driver) readStdout(r *os.File) {
	defer r.Close()
	defer close(d.lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		text, err := readLine(br, d.f.opt.MaxLine)
		if err == nil {
			d.lines <- line{text: text}
			continue
		}
		if errors.Is(err, bufio.ErrTooLong) {
			// Stop at the limit, without reading the rest: the head is the report.
			d.lines <- line{text: text, err: err}
			return
		}
		if len(text) > 0 && err == io.EOF { // a last line without its newline
			d.lines <- line{text: text}
		}
		d.lines <- line{err: err}
		return
	}
}

// quoteHead is how much of an over-long line a failure quotes.
const quoteHead = 200

// readLine reads one line without its newline. A line longer than limit fails with
// bufio.ErrTooLong as soon as limit bytes have arrived, returning its first quoteHead bytes.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit || (len(buf) == limit && err == bufio.ErrBufferFull) {
			return append([]byte(nil), buf[:min(len(buf), quoteHead)]...), bufio.ErrTooLong
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return buf, err
		}
		return bytes.TrimSuffix(buf[:len(buf)-1], []byte("\r")), nil
	}
}

func (d *driver) Name() string { return d.f.name }

// ended tells a process that has exited (a spare that died while it waited).
func (d *driver) ended() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// kill ends the process group and waits (bounded) for the reap.
func (d *driver) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd.Process != nil {
		killGroup(d.cmd.Process.Pid)
	}
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
	}
	d.stdin.Close()
	// Let the last words on stderr arrive: they are the most useful part of the report.
	select {
	case <-d.errEOF:
	case <-time.After(500 * time.Millisecond):
	}
}

// exitStatus describes how the process ended, waiting up to grace for it to end.
func (d *driver) exitStatus(grace time.Duration) string {
	select {
	case <-d.exited:
	default:
		select {
		case <-d.exited:
		case <-time.After(grace):
			return "still running"
		}
	}
	if d.waitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(d.waitErr, &ee) {
		return ee.ProcessState.String()
	}
	return d.waitErr.Error()
}

// write writes b to the port's standard input, whole before an EndInput closes it.
func (d *driver) write(b []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	_, err := d.stdin.Write(b)
	return err
}

// fail records a protocol-level failure, ends the process and returns the error.
func (d *driver) fail(op, reason string, offending []byte) error {
	d.f.rec.add("# the kit gave up on "+op+": ", []byte(reason))
	d.kill()
	e := &drivers.PortError{Port: d.f.name, Op: op, Reason: reason, Line: clip(offending), Stderr: d.stderr.String()}
	if !d.inputEnd.Load() {
		// After the end of its input the port owes a request in flight no reply (B-286).
		d.failed = e
	}
	return e
}

func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// encode writes {"seq":N,"op":"…", <args' fields>}.
func encode(seq uint64, op string, args any) ([]byte, error) {
	head, _ := json.Marshal(protocol.Request{Seq: seq, Op: op})
	if args == nil {
		return head, nil
	}
	body, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(body, []byte("{")) {
		return nil, fmt.Errorf("arguments of %s are not a JSON object", op)
	}
	if string(body) == "{}" {
		return head, nil
	}
	out := append(head[:len(head)-1:len(head)-1], ',')
	return append(out, body[1:]...), nil
}

// call sends one request and returns its result, enforcing the deadline and the schema.
func (d *driver) call(ctx context.Context, op string, args any, timeout time.Duration) (json.RawMessage, error) {
	if err := d.usable(op); err != nil {
		return nil, err
	}
	if !slices.Contains(protocol.Ops, op) {
		return nil, &drivers.PortError{Port: d.f.name, Op: op, Reason: "unknown op: not in the port protocol"}
	}
	req, err := encode(d.seq+1, op, args)
	if err != nil {
		return nil, fmt.Errorf("subprocess: %s: %w", op, err)
	}
	if err := check(d.f.v.requests[op], req); err != nil {
		// The kit built a request its own schema refuses: a harness bug, not the port's.
		return nil, fmt.Errorf("subprocess: request %s does not match the protocol schema: %v", req, err)
	}
	return d.send(ctx, op, req, timeout)
}

// Raw sends a request built field by field as it is (drivers.RawCaller): no schema check on the
// request, the reply checked as any other.
func (d *driver) Raw(ctx context.Context, op string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	if err := d.usable(op); err != nil {
		return nil, err
	}
	seq := d.seq + 1
	if raw, ok := fields["seq"]; ok {
		// The harness chose the seq (the echo is the port's duty, whatever the number).
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("subprocess: %s: seq %s: %w", op, raw, err)
		}
	}
	req, err := drivers.RawLine(seq, op, fields)
	if err != nil {
		return nil, fmt.Errorf("subprocess: %s: %w", op, err)
	}
	res, err := d.sendSeq(ctx, op, req, seq, d.f.opt.Deadline)
	if op == "close" && err == nil {
		d.closeSent = true // Close then waits for the exit without a second close
	}
	return res, err
}

var _ drivers.LineSender = (*driver)(nil)

// Line writes text as one line, as it is, and reads the reply (drivers.LineSender): with seq 0
// text is not a request, so no seq of the session is spent on it and the reply must be a
// failure with seq 0; otherwise text is a request written by hand and the reply must echo seq.
func (d *driver) Line(ctx context.Context, text []byte, seq uint64) (json.RawMessage, error) {
	op := "a line that is not a request"
	if seq != 0 {
		var env struct {
			Op string `json:"op"`
		}
		_ = json.Unmarshal(text, &env) // an op that is not a string: no result schema to hold it to
		op = env.Op
	}
	if err := d.usable(op); err != nil {
		return nil, err
	}
	if d.seq == 0 {
		return nil, fmt.Errorf("subprocess: a line before the session's hello")
	}
	timeout := d.f.opt.Deadline + d.allowance("", text)
	deadline := time.Now().Add(timeout)
	_ = d.stdin.SetWriteDeadline(deadline)
	d.f.rec.add("→ ", text)
	if err := d.write(append(slices.Clip(text), '\n')); err != nil {
		return nil, d.fail(op, fmt.Sprintf("could not write the line (%v); the port %s", err, d.exitStatus(time.Second)), nil)
	}
	l, err := d.await(ctx, op, seq, timeout, deadline, nil)
	if err != nil {
		return nil, err
	}
	d.f.rec.add("← ", l.text)
	if seq == 0 && answeredOK(l.text) {
		return nil, d.fail(op, "answered ok: true to a line that is not a request", l.text)
	}
	return d.decode(op, seq, l.text)
}

// answeredOK says a reply line says ok: true.
func answeredOK(text []byte) bool {
	var r struct {
		OK bool `json:"ok"`
	}
	return json.Unmarshal(text, &r) == nil && r.OK
}

// Conversing marks the port as one that reads its requests as they are written
// (drivers.Conversing).
func (d *driver) Conversing() {}

// Pipeline writes every request before it reads a reply (drivers.Pipeliner), then reads the
// replies in order, each within its own deadline counted from the previous reply: the port
// serves one request at a time, so the last one waits for all before it. A conversation fault
// (a reply out of sequence, a hang, a crash) ends the session and is the error.
func (d *driver) Pipeline(ctx context.Context, reqs []drivers.RawRequest) ([]drivers.RawReply, error) {
	if err := d.usable("pipeline"); err != nil {
		return nil, err
	}
	if d.seq == 0 {
		return nil, fmt.Errorf("subprocess: a pipeline before the session's hello")
	}
	batch, seqs, timeouts, err := d.pipelined(reqs)
	if err != nil {
		return nil, err
	}
	_ = d.stdin.SetWriteDeadline(time.Now().Add(d.f.opt.Deadline))
	if err := d.write(batch); err != nil {
		return nil, d.fail(pipeOp(reqs[0]), fmt.Sprintf("could not write the requests (%v); the port %s", err, d.exitStatus(time.Second)), nil)
	}
	out := make([]drivers.RawReply, len(reqs))
	for i, r := range reqs {
		op := pipeOp(r)
		if seqs[i] != 0 {
			d.seq = seqs[i]
		}
		l, err := d.await(ctx, op, seqs[i], timeouts[i], time.Now().Add(timeouts[i]), nil)
		if err != nil {
			return nil, err
		}
		d.f.rec.add("← ", l.text)
		if seqs[i] == 0 && answeredOK(l.text) {
			return nil, d.fail(op, "answered ok: true to a line that is not a request", l.text)
		}
		out[i].Result, out[i].Err = d.decode(op, seqs[i], l.text)
		if d.failed != nil {
			return nil, d.failed
		}
	}
	return out, nil
}

// pipelined is a pipeline's lines, written together, with each one's seq (0 for a line that is
// not a request) and its reply's deadline.
func (d *driver) pipelined(reqs []drivers.RawRequest) (batch []byte, seqs []uint64, timeouts []time.Duration, err error) {
	seqs, timeouts = make([]uint64, len(reqs)), make([]time.Duration, len(reqs))
	next := d.seq
	for i, r := range reqs {
		req, op := r.Line, ""
		if req == nil {
			next++
			seqs[i], op = next, r.Op
			if req, err = drivers.RawLine(next, r.Op, r.Fields); err != nil {
				return nil, nil, nil, fmt.Errorf("subprocess: pipeline %s: %w", r.Op, err)
			}
			if r.Op == "close" {
				d.closeIn.Store(true)
			}
		}
		timeouts[i] = d.f.opt.Deadline + d.allowance(op, req)
		if op == "park" {
			timeouts[i] = parkWait(req) + d.f.opt.ParkSlack
		}
		d.f.rec.add("→ ", req)
		batch = append(append(batch, req...), '\n')
	}
	return batch, seqs, timeouts, nil
}

// allowance is what req's deadline grows by past the flat one (B-20): PerItem for each item it
// names and PerMiB for each MiB of the longest line the session has sent, req included (a reply
// can carry back what an earlier request stored). op is "" for a line that is not a request.
func (d *driver) allowance(op string, req []byte) time.Duration {
	d.largest = max(d.largest, len(req))
	return workItems(op, req)*d.f.opt.PerItem + byteAllowance(d.largest, d.f.opt.PerMiB)
}

// pipeOp names a pipeline's entry in errors: its op, or what a line that is not a request is.
func pipeOp(r drivers.RawRequest) string {
	if r.Line != nil {
		return "a line that is not a request"
	}
	return r.Op
}

// Fault is the session's first protocol-level failure (drivers.Faulter): nil while the port
// keeps the conversation.
func (d *driver) Fault() *drivers.PortError { return d.failed }

// usable refuses a call on a failed or closed session.
func (d *driver) usable(op string) error {
	if d.failed != nil {
		return &drivers.PortError{Port: d.f.name, Op: op, Reason: "the session already failed: " + d.failed.Reason, Stderr: d.failed.Stderr}
	}
	if d.closed {
		return &drivers.PortError{Port: d.f.name, Op: op, Reason: "session is closed"}
	}
	return nil
}

// send writes req (whose seq is d.seq+1) and reads its reply within timeout (the start deadline
// for a session's first request).
func (d *driver) send(ctx context.Context, op string, req []byte, timeout time.Duration) (json.RawMessage, error) {
	return d.sendSeq(ctx, op, req, d.seq+1, timeout)
}

// sendSeq is send for a request whose seq is seq.
func (d *driver) sendSeq(ctx context.Context, op string, req []byte, seq uint64, timeout time.Duration) (json.RawMessage, error) {
	// Every session's first request pays a process start-up (B-23), the first one's and every
	// later one's alike: a machine busy enough to start an interpreter in 10 s must not fail a
	// correct port, and a port that hangs there is named mute within MuteAfter.
	startup := d.seq == 0
	if startup {
		timeout = d.f.opt.StartDeadline // the start-up's, shorter or longer than a request's
	} else if op != "park" {
		timeout += d.allowance(op, req)
	}
	d.seq++
	deadline := time.Now().Add(timeout)
	_ = d.stdin.SetWriteDeadline(deadline)
	d.f.rec.add("→ ", req)
	if err := d.write(append(req, '\n')); err != nil {
		return nil, d.fail(op, fmt.Sprintf("could not write the request (%v); the port %s", err, d.exitStatus(time.Second)), nil)
	}
	var mute *muteWatch
	if startup {
		mute = d.watchMute()
	}
	l, err := d.await(ctx, op, seq, timeout, deadline, mute)
	if err != nil {
		return nil, err
	}
	d.f.rec.add("← ", l.text)
	return d.decode(op, seq, l.text)
}

// await reads the line that answers seq, or fails the session; mute, if set, ends the wait
// early for a port that read the request and then sat idle.
func (d *driver) await(ctx context.Context, op string, seq uint64, timeout time.Duration, deadline time.Time, mute *muteWatch) (line, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var l line
	var ok bool
	var tick <-chan time.Time
	if mute != nil {
		t := time.NewTicker(mutePoll)
		defer t.Stop()
		tick = t.C
	}
	exited := d.exited
	for got := false; !got; {
		select {
		case l, ok = <-d.lines:
			got = true
		case <-exited:
			// The port ended; a reply it printed first is still in the pipe, and the reader
			// reaches it before the pipe's end: read on. No fixed grace (a loaded machine
			// outran 200 ms and failed a port that had answered its close); the deadline still
			// bounds a pipe a process the port left behind holds open.
			exited, tick = nil, nil
		case <-timer.C:
			if d.ended() {
				return l, d.fail(op, fmt.Sprintf("exited (%s) without answering seq %d", d.exitStatus(0), seq), nil)
			}
			return l, d.fail(op, fmt.Sprintf("no reply to seq %d within %s (deadline); the port was killed", seq, timeout), nil)
		case now := <-tick:
			if mute.silent(now) {
				return l, d.fail(op, fmt.Sprintf("read seq %d and then sat idle for %s: no reply, and no CPU used by its processes (a port still starting up has not read its first request, or is using the CPU); a mute port, killed", seq, d.f.opt.MuteAfter), nil)
			}
		case <-ctx.Done():
			d.fail(op, "the harness gave up: "+ctx.Err().Error(), nil)
			return l, fmt.Errorf("subprocess: %s: %w", op, ctx.Err())
		}
	}
	switch {
	case !ok || errors.Is(l.err, io.EOF):
		return l, d.fail(op, fmt.Sprintf("closed its standard output without answering seq %d (%s)", seq, d.exitStatus(time.Second)), nil)
	case errors.Is(l.err, bufio.ErrTooLong):
		return l, d.fail(op, fmt.Sprintf("printed a line longer than %d bytes (the limit); it begins %q", d.f.opt.MaxLine, l.text), l.text)
	case l.err != nil:
		return l, d.fail(op, "reading its standard output: "+l.err.Error(), nil)
	}
	return l, nil
}

// decode checks one reply line against the envelope, the sequence and the op's result schema.
func (d *driver) decode(op string, seq uint64, text []byte) (json.RawMessage, error) {
	if !json.Valid(text) {
		return nil, d.fail(op, fmt.Sprintf("printed a line that is not JSON where the reply to seq %d was due", seq), text)
	}
	if err := check(d.f.v.reply, text); err != nil {
		return nil, d.fail(op, "reply does not match the protocol schema: "+err.Error(), text)
	}
	var r protocol.Reply
	if err := json.Unmarshal(text, &r); err != nil {
		return nil, d.fail(op, "reply does not decode: "+err.Error(), text)
	}
	if r.Seq != seq {
		return nil, d.fail(op, fmt.Sprintf("answered out of sequence: expected seq %d, got %d", seq, r.Seq), text)
	}
	if !r.OK {
		err, known := drivers.ReplyError(d.f.name, op, r.Error)
		if !known {
			return nil, d.fail(op, "unknown error type "+r.Error.Type, text)
		}
		var pe *drivers.PortError
		if errors.As(err, &pe) {
			// INTERNAL: the port is alive and says it failed; the contract fails, the session may go on.
			pe.Line, pe.Stderr = clip(text), d.stderr.String()
		}
		return nil, err
	}
	if err := check(d.f.v.results[op], r.Result); err != nil {
		return nil, d.fail(op, "result does not match the protocol schema for "+op+": "+err.Error(), text)
	}
	return r.Result, nil
}

// do sends op and decodes its result into T.
func do[T any](ctx context.Context, d *driver, op string, args any) (T, error) {
	var out T
	raw, err := d.call(ctx, op, args, d.f.opt.Deadline)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, d.fail(op, "result does not decode: "+err.Error(), raw)
	}
	return out, nil
}

func (d *driver) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	return do[protocol.HelloResult](ctx, d, "hello", a)
}
func (d *driver) Mint(ctx context.Context, a protocol.MintArgs) (protocol.MintResult, error) {
	return do[protocol.MintResult](ctx, d, "mint", a)
}
func (d *driver) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	return do[protocol.KeyResult](ctx, d, "key", a)
}
func (d *driver) Slot(ctx context.Context, a protocol.SlotArgs) (protocol.SlotResult, error) {
	return do[protocol.SlotResult](ctx, d, "slot", a)
}
func (d *driver) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	return do[protocol.EnqueueResult](ctx, d, "enqueue", a)
}
func (d *driver) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	return do[*protocol.ClaimResult](ctx, d, "claim", a)
}
func (d *driver) LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	return do[*protocol.ClaimResult](ctx, d, "lane_claim", a)
}
func (d *driver) Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error) {
	return do[protocol.ExtendResult](ctx, d, "extend", a)
}
func (d *driver) Complete(ctx context.Context, a protocol.FenceArgs) error {
	_, err := do[protocol.Empty](ctx, d, "complete", a)
	return err
}
func (d *driver) Retry(ctx context.Context, a protocol.RetryArgs) (protocol.RetryResult, error) {
	return do[protocol.RetryResult](ctx, d, "retry", a)
}
func (d *driver) Fail(ctx context.Context, a protocol.FailArgs) error {
	_, err := do[protocol.Empty](ctx, d, "fail", a)
	return err
}
func (d *driver) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error {
	_, err := do[protocol.Empty](ctx, d, "checkpoint", a)
	return err
}
func (d *driver) Reap(ctx context.Context, a protocol.ReapArgs) (protocol.CountResult, error) {
	return do[protocol.CountResult](ctx, d, "reap", a)
}
func (d *driver) Promote(ctx context.Context, a protocol.PromoteArgs) (protocol.CountResult, error) {
	return do[protocol.CountResult](ctx, d, "promote", a)
}
func (d *driver) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	return do[protocol.MorgueResult](ctx, d, "morgue", a)
}
func (d *driver) Revive(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	return do[protocol.ChangedResult](ctx, d, "revive", a)
}
func (d *driver) Purge(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	return do[protocol.ChangedResult](ctx, d, "purge", a)
}
func (d *driver) Pause(ctx context.Context, a protocol.QueueArgs) error {
	_, err := do[protocol.Empty](ctx, d, "pause", a.Wire("pause"))
	return err
}
func (d *driver) Resume(ctx context.Context, a protocol.QueueArgs) error {
	_, err := do[protocol.Empty](ctx, d, "resume", a.Wire("resume"))
	return err
}
func (d *driver) LanePause(ctx context.Context, a protocol.QueueArgs) error {
	_, err := do[protocol.Empty](ctx, d, "lane_pause", a.Wire("lane_pause"))
	return err
}
func (d *driver) LaneResume(ctx context.Context, a protocol.QueueArgs) error {
	_, err := do[protocol.Empty](ctx, d, "lane_resume", a.Wire("lane_resume"))
	return err
}
func (d *driver) LaneCeiling(ctx context.Context, a protocol.QueueArgs) error {
	_, err := do[protocol.Empty](ctx, d, "lane_ceiling", a.Wire("lane_ceiling"))
	return err
}

// Park waits for the port's consumers: the deadline is the op's own timeout plus ParkSlack.
func (d *driver) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	var out protocol.ParkResult
	raw, err := d.call(ctx, "park", a, time.Duration(a.TimeoutMS)*time.Millisecond+d.f.opt.ParkSlack)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, d.fail("park", "result does not decode: "+err.Error(), raw)
	}
	return out, nil
}

// EnqueueBatch, ClaimBatch and CompleteBatch are the optional batch ops (drivers.Batcher); a
// port without them answers UNSUPPORTED.
func (d *driver) EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	return do[protocol.EnqueueBatchResult](ctx, d, "enqueue_batch", a)
}
func (d *driver) ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	return do[protocol.ClaimBatchResult](ctx, d, "claim_batch", a)
}
func (d *driver) CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	return do[protocol.CompleteBatchResult](ctx, d, "complete_batch", a)
}

// Clock is the optional clock test op (drivers.Clocker); a port without it answers UNSUPPORTED.
func (d *driver) Clock(ctx context.Context, a protocol.ClockArgs) error {
	_, err := do[protocol.Empty](ctx, d, "clock", a)
	return err
}

func (d *driver) Reconnect(ctx context.Context) error {
	_, err := do[protocol.Empty](ctx, d, "reconnect", nil)
	return err
}

// EndInput closes the port's standard input (drivers.InputEnder) and waits for the process to
// exit, until until: with no close sent a port must then end its session as close does and
// exit 0 (B-286); after a pipeline that wrote a close, it serves what it read and exits 0 on the
// close. A park in flight on another goroutine reads its reply, if the port prints one, or
// finds the port gone.
func (d *driver) EndInput(ctx context.Context, until time.Time) error {
	// A pipeline on another goroutine may still be writing a long line: the input ends after it.
	d.wmu.Lock()
	d.inputEnd.Store(true)
	start := time.Now()
	if d.closeIn.Load() {
		d.f.rec.append("# the kit closed the port's standard input (after the close written above)")
	} else {
		d.f.rec.append("# the kit closed the port's standard input (no close sent)")
	}
	d.stdin.Close()
	d.wmu.Unlock()
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case <-d.exited:
	case <-timer.C:
		return &drivers.PortError{Port: d.f.name, Op: "end of input", Reason: fmt.Sprintf("still running %s after its standard input ended", time.Since(start).Round(time.Millisecond)), Stderr: d.stderr.String()}
	case <-ctx.Done():
		return ctx.Err()
	}
	if d.waitErr != nil {
		return &drivers.PortError{Port: d.f.name, Op: "end of input", Reason: "exited with " + d.exitStatus(0) + " after its standard input ended (want status 0)", Stderr: d.stderr.String()}
	}
	return nil
}

// EndInputInsideALine writes req with no newline after it and ends the port's input there.
func (d *driver) EndInputInsideALine(ctx context.Context, req drivers.RawRequest, until time.Time) error {
	if err := d.usable(req.Op); err != nil {
		return err
	}
	line, err := drivers.RawLine(d.seq+1, req.Op, req.Fields)
	if err != nil {
		return err
	}
	d.seq++
	d.f.rec.add("→ ", line)
	d.f.rec.append("# (no newline after it)")
	if err := d.write(line); err != nil {
		return d.fail(req.Op, fmt.Sprintf("could not write the request (%v); the port %s", err, d.exitStatus(time.Second)), nil)
	}
	return d.EndInput(ctx, until)
}

// Close sends close and expects the port to exit 0 within the deadline. Whatever happens, the
// process group is killed and reaped afterwards. Closing a failed session only reaps it.
func (d *driver) Close(ctx context.Context) error {
	if d.closed {
		return nil
	}
	if d.failed != nil || d.inputEnd.Load() {
		d.closed = true
		d.kill()
		return nil
	}
	var err error
	if !d.closeSent {
		_, err = do[protocol.Empty](ctx, d, "close", nil)
	}
	d.closed = true
	if err != nil {
		d.kill()
		return err
	}
	wait := d.f.opt.Deadline
	if d.f.lingers.Load() {
		// A session of this port already stayed after close: that failure is on record, and
		// every clause waiting out a whole deadline for it again would only slow the run.
		wait = min(wait, lingerWait)
	}
	select {
	case <-d.exited:
	case <-time.After(wait):
		d.f.lingers.Store(true)
		return d.fail("close", fmt.Sprintf("did not exit within %s after close; the port was killed", wait), nil)
	case <-ctx.Done():
		d.kill()
		return ctx.Err()
	}
	status := d.exitStatus(0)
	d.kill() // reap anything the port left behind in its group
	if d.waitErr != nil {
		e := &drivers.PortError{Port: d.f.name, Op: "close", Reason: "exited with " + status + " after close (want status 0)", Stderr: d.stderr.String()}
		d.failed = e
		return e
	}
	return nil
}
