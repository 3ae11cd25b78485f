// Package portserver speaks the port protocol (contracts/PROTOCOL.md Part B) on a reader and a
// writer over any drivers.Driver: one JSON request per line in, one reply per line out, in
// order. It is how the reference bus becomes a port binary (cmd/emq-port).
package portserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// maxLine bounds one request line (payloads travel inside it, base64).
const maxLine = 64 << 20

// Input bounds the server enforces before any op runs, whatever the driver.
const (
	// MaxMS is the canon's largest duration (A16: lease_ms 1..1e14, delay_ms 0..1e14); above it
	// a value would saturate into a centuries-long lease.
	MaxMS = 100_000_000_000_000
	// MaxMint bounds n × parallel of one mint, so its reply fits in memory.
	MaxMint = 100_000
)

// ServeFactory starts one session from f and serves it.
func ServeFactory(ctx context.Context, f drivers.Factory, in io.Reader, out io.Writer) error {
	d, err := f.Start(ctx)
	if err != nil {
		return fmt.Errorf("portserver: start %s: %w", f.Name(), err)
	}
	return Serve(ctx, d, in, out)
}

// Serve answers requests from in on out until a close request (answered, then nil), the end of
// in (the driver is closed, nil), a write failure or ctx's end. A park waits by design (up to
// its timeout_ms): the end of in cuts it short, so a port whose kit went away exits promptly.
func Serve(ctx context.Context, d drivers.Driver, in io.Reader, out io.Writer) error {
	lines, ended, stop := readLines(in)
	defer stop()
	w := bufio.NewWriter(out)
	for {
		if err := ctx.Err(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return err
		}
		var l input
		select {
		case l = <-lines:
		case <-ctx.Done():
			continue
		}
		line, err := l.line, l.err
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				d.Close(context.WithoutCancel(ctx))
				if err == io.EOF {
					return nil
				}
				return fmt.Errorf("portserver: read: %w", err)
			}
			continue
		}
		opCtx, done := untilEnd(ctx, line, ended)
		reply, closing := handle(opCtx, d, line)
		done()
		buf, merr := json.Marshal(reply)
		if merr != nil {
			buf, _ = json.Marshal(protocol.Reply{Seq: reply.Seq, Error: &protocol.WireError{Type: protocol.ErrTypeInternal, Message: "encode reply: " + merr.Error()}})
		}
		w.Write(buf)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return fmt.Errorf("portserver: write: %w", err)
		}
		if closing {
			return nil
		}
	}
}

// input is one line read, or the error that ended the input.
type input struct {
	line []byte
	err  error
}

// readLines reads in on its own goroutine, one line at a time as Serve takes them; ended is
// closed when in ends (before that end is handed over). stop releases the goroutine.
func readLines(in io.Reader) (lines <-chan input, ended <-chan struct{}, stop func()) {
	ch, end, quit := make(chan input), make(chan struct{}), make(chan struct{})
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r)
			if err != nil {
				close(end)
			}
			select {
			case ch <- input{line, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, end, func() { close(quit) }
}

// untilEnd is ctx for one request; a park's is also cancelled when the input ends, since
// nobody is left to read its reply. (The input is read one line ahead, so it ends during an op
// only when that op was the last line.) Other ops are short and run to their end.
func untilEnd(ctx context.Context, line []byte, ended <-chan struct{}) (context.Context, context.CancelFunc) {
	var op struct {
		Op string `json:"op"`
	}
	if json.Unmarshal(line, &op) != nil || op.Op != "park" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// readLine reads one line without its newline; a line over maxLine is an error.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("request line over %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// handle decodes one request, runs it and builds the reply; closing is true after close.
func handle(ctx context.Context, d drivers.Driver, line []byte) (reply protocol.Reply, closing bool) {
	var req protocol.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return fail(0, &emqerr.Error{Type: emqerr.TypeArg, Message: "request is not a JSON object with seq and op: " + err.Error()}), false
	}
	if err := bounded(line); err != nil {
		return fail(req.Seq, err), false
	}
	op, ok := ops[req.Op]
	if !ok {
		return fail(req.Seq, &drivers.UnsupportedError{Op: req.Op, Message: "unknown op"}), false
	}
	closing = req.Op == "close" // the port exits after close, whatever the driver said
	result, err := op(ctx, d, line)
	if err != nil {
		return fail(req.Seq, err), closing
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return fail(req.Seq, err), closing
	}
	return protocol.Reply{Seq: req.Seq, OK: true, Result: raw}, closing
}

// bounded refuses (EMQARG) a request without seq, a duration above MaxMS and a mint of more
// than MaxMint ids.
func bounded(line []byte) error {
	var f struct {
		Seq      *uint64 `json:"seq"`
		Op       string  `json:"op"`
		LeaseMS  int64   `json:"lease_ms"`
		DelayMS  int64   `json:"delay_ms"`
		N        int64   `json:"n"`
		Parallel int64   `json:"parallel"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return &emqerr.Error{Type: emqerr.TypeArg, Message: "arguments: " + err.Error()}
	}
	switch {
	case f.Seq == nil:
		return &emqerr.Error{Type: emqerr.TypeArg, Message: "request without seq"}
	case f.LeaseMS > MaxMS:
		return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf("lease_ms %d: want at most %d", f.LeaseMS, int64(MaxMS))}
	case f.DelayMS > MaxMS:
		return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf("delay_ms %d: want at most %d", f.DelayMS, int64(MaxMS))}
	case f.Op == "mint" && (f.N < 0 || f.Parallel < 0 || f.N > MaxMint || f.Parallel > MaxMint || f.N*max(f.Parallel, 1) > MaxMint):
		return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf("mint n %d × parallel %d: want at most %d ids", f.N, f.Parallel, MaxMint)}
	}
	return nil
}

// fail maps an error to the wire: a canon error keeps its type, an unsupported op is
// UNSUPPORTED, anything else INTERNAL.
func fail(seq uint64, err error) protocol.Reply {
	we := &protocol.WireError{Type: protocol.ErrTypeInternal, Message: err.Error()}
	var e *emqerr.Error
	var u *drivers.UnsupportedError
	switch {
	case errors.As(err, &e):
		we = &protocol.WireError{Type: string(e.Type), Message: e.Message}
	case errors.As(err, &u):
		we.Type = protocol.ErrTypeUnsupported
	}
	return protocol.Reply{Seq: seq, Error: we}
}

type opFunc func(ctx context.Context, d drivers.Driver, line []byte) (any, error)

// decode unmarshals the request's top-level fields into the op's arguments. A field the
// protocol's schema lists as required must be there: its absence is EMQARG, like a value of the
// wrong type (lane_ceiling without its ceiling is refused, not read as 0).
func decode[A any](line []byte, required []string) (A, error) {
	var a A
	if len(required) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil {
			return a, &emqerr.Error{Type: emqerr.TypeArg, Message: "arguments: " + err.Error()}
		}
		for _, f := range required {
			if v, ok := fields[f]; !ok || string(v) == "null" {
				return a, &emqerr.Error{Type: emqerr.TypeArg, Message: "missing required field " + f}
			}
		}
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return a, &emqerr.Error{Type: emqerr.TypeArg, Message: "arguments: " + err.Error()}
	}
	return a, nil
}

// call adapts a driver method with a result.
func call[A, R any](op string, f func(drivers.Driver, context.Context, A) (R, error)) opFunc {
	required := protocol.Required(op)
	return func(ctx context.Context, d drivers.Driver, line []byte) (any, error) {
		a, err := decode[A](line, required)
		if err != nil {
			return nil, err
		}
		return f(d, ctx, a)
	}
}

// call0 adapts a driver method that answers only success.
func call0[A any](op string, f func(drivers.Driver, context.Context, A) error) opFunc {
	required := protocol.Required(op)
	return func(ctx context.Context, d drivers.Driver, line []byte) (any, error) {
		a, err := decode[A](line, required)
		if err != nil {
			return nil, err
		}
		return protocol.Empty{}, f(d, ctx, a)
	}
}

var ops = map[string]opFunc{
	"hello":        call("hello", drivers.Driver.Hello),
	"mint":         call("mint", drivers.Driver.Mint),
	"key":          call("key", drivers.Driver.Key),
	"slot":         call("slot", drivers.Driver.Slot),
	"enqueue":      call("enqueue", drivers.Driver.Enqueue),
	"claim":        call("claim", drivers.Driver.Claim),
	"lane_claim":   call("lane_claim", drivers.Driver.LaneClaim),
	"extend":       call("extend", drivers.Driver.Extend),
	"complete":     call0("complete", drivers.Driver.Complete),
	"retry":        call("retry", drivers.Driver.Retry),
	"fail":         call0("fail", drivers.Driver.Fail),
	"checkpoint":   call0("checkpoint", drivers.Driver.Checkpoint),
	"reap":         call("reap", drivers.Driver.Reap),
	"promote":      call("promote", drivers.Driver.Promote),
	"morgue":       call("morgue", drivers.Driver.Morgue),
	"revive":       call("revive", drivers.Driver.Revive),
	"purge":        call("purge", drivers.Driver.Purge),
	"pause":        call0("pause", drivers.Driver.Pause),
	"resume":       call0("resume", drivers.Driver.Resume),
	"lane_pause":   call0("lane_pause", drivers.Driver.LanePause),
	"lane_resume":  call0("lane_resume", drivers.Driver.LaneResume),
	"lane_ceiling": call0("lane_ceiling", drivers.Driver.LaneCeiling),
	"park":         call("park", drivers.Driver.Park),
	"reconnect": func(ctx context.Context, d drivers.Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Reconnect(ctx)
	},
	"clock": call0("clock", func(d drivers.Driver, ctx context.Context, a protocol.ClockArgs) error {
		c, ok := d.(drivers.Clocker)
		if !ok {
			return &drivers.UnsupportedError{Op: "clock", Message: "this port's minter clock cannot be scripted"}
		}
		return c.Clock(ctx, a)
	}),
	"close": func(ctx context.Context, d drivers.Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Close(ctx)
	},
}
