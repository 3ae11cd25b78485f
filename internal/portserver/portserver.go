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
	"reflect"
	"strings"

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
// in (the driver is closed, nil), a write failure or ctx's end.
func Serve(ctx context.Context, d drivers.Driver, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	for {
		if err := ctx.Err(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return err
		}
		line, err := readLine(r)
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
		reply, closing := handle(ctx, d, line)
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

// decode unmarshals the request's top-level fields into the op's arguments. A field the shape
// does not mark omitempty is required: its absence is EMQARG, like a value of the wrong type.
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

// requiredFields lists the JSON names of t's fields without omitempty, embedded structs
// included.
func requiredFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, requiredFields(f.Type)...)
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || strings.Contains(opts, "omitempty") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// call adapts a driver method with a result.
func call[A, R any](f func(drivers.Driver, context.Context, A) (R, error)) opFunc {
	required := requiredFields(reflect.TypeFor[A]())
	return func(ctx context.Context, d drivers.Driver, line []byte) (any, error) {
		a, err := decode[A](line, required)
		if err != nil {
			return nil, err
		}
		return f(d, ctx, a)
	}
}

// call0 adapts a driver method that answers only success.
func call0[A any](f func(drivers.Driver, context.Context, A) error) opFunc {
	required := requiredFields(reflect.TypeFor[A]())
	return func(ctx context.Context, d drivers.Driver, line []byte) (any, error) {
		a, err := decode[A](line, required)
		if err != nil {
			return nil, err
		}
		return protocol.Empty{}, f(d, ctx, a)
	}
}

var ops = map[string]opFunc{
	"hello":        call(drivers.Driver.Hello),
	"mint":         call(drivers.Driver.Mint),
	"key":          call(drivers.Driver.Key),
	"slot":         call(drivers.Driver.Slot),
	"enqueue":      call(drivers.Driver.Enqueue),
	"claim":        call(drivers.Driver.Claim),
	"lane_claim":   call(drivers.Driver.LaneClaim),
	"extend":       call(drivers.Driver.Extend),
	"complete":     call0(drivers.Driver.Complete),
	"retry":        call(drivers.Driver.Retry),
	"fail":         call0(drivers.Driver.Fail),
	"checkpoint":   call0(drivers.Driver.Checkpoint),
	"reap":         call(drivers.Driver.Reap),
	"promote":      call(drivers.Driver.Promote),
	"morgue":       call(drivers.Driver.Morgue),
	"revive":       call(drivers.Driver.Revive),
	"purge":        call(drivers.Driver.Purge),
	"pause":        call0(drivers.Driver.Pause),
	"resume":       call0(drivers.Driver.Resume),
	"lane_pause":   call0(drivers.Driver.LanePause),
	"lane_resume":  call0(drivers.Driver.LaneResume),
	"lane_ceiling": call0(drivers.Driver.LaneCeiling),
	"park":         call(drivers.Driver.Park),
	"reconnect": func(ctx context.Context, d drivers.Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Reconnect(ctx)
	},
	"close": func(ctx context.Context, d drivers.Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Close(ctx)
	},
}
