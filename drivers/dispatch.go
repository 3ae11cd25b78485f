package drivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// Dispatch answers one request line of the port protocol over d: it decodes the line, holds its
// fields to their domains (protocol.Check: absent, null, the wrong JSON type, out of range and
// bad base64 are EMQARG, an empty name or id EMQKEY), runs the op and builds the reply; closing
// is true after close. It is the port protocol's JSON layer over any Driver: internal/portserver
// serves it on stdio, and the harness sends raw requests through it to a Driver that speaks no
// JSON (Raw).
func Dispatch(ctx context.Context, d Driver, line []byte) (reply protocol.Reply, closing bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return Failed(0, argErr("request is not a JSON object: %v", err)), false
	}
	seq, ok := unsignedSeq(fields["seq"])
	if !ok {
		return Failed(0, argErr("request without an unsigned integer seq")), false
	}
	// An op that is not a string names no op the port implements: UNSUPPORTED, under the
	// request's own seq (B-285 answers seq 0 only to a line without a usable seq).
	var name string
	if raw, present := fields["op"]; present && json.Unmarshal(raw, &name) != nil {
		name = string(raw)
	}
	op, ok := ops[name]
	if !ok {
		return Failed(seq, &UnsupportedError{Op: name, Message: "unknown op"}), false
	}
	closing = name == "close" // the port exits after close, whatever the driver said
	checked, err := protocol.Check(name, fields)
	if err != nil {
		return Failed(seq, err), false
	}
	body, _ := json.Marshal(checked)
	result, err := op(ctx, d, body)
	if err != nil {
		return Failed(seq, err), closing
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return Failed(seq, err), closing
	}
	return protocol.Reply{Seq: seq, OK: true, Result: raw}, closing
}

// unsignedSeq reads a request's seq: a JSON number with a non-negative integral value of at most
// MaxSeq, written any way JSON allows (1000, 1e3 and 1000.0 are one integer, Part B [B-87]).
func unsignedSeq(raw json.RawMessage) (uint64, bool) {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, false // absent, a string (json.Number would take "7"), or not a number
	}
	s := n.String()
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		// big.Rat expands the exponent: a huge one (1e-999999999) would cost gigabytes.
		if e, err := strconv.Atoi(s[i+1:]); err != nil || e < -1000 || e > 1000 {
			return 0, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsUint64() || r.Num().Uint64() > MaxSeq {
		return 0, false
	}
	return r.Num().Uint64(), true
}

// MaxSeq is the largest seq, 2⁵³ − 1: past it a JavaScript port's reader rounds the number, so
// the protocol makes a larger one no request (Part B [B-293]).
const MaxSeq = 1<<53 - 1

// Failed maps an error to a failed reply: a canon error keeps its type (a protocol.FieldError
// its own), an unsupported op is UNSUPPORTED, anything else INTERNAL.
func Failed(seq uint64, err error) protocol.Reply {
	we := &protocol.WireError{Type: protocol.ErrTypeInternal, Message: err.Error()}
	var e *emqerr.Error
	var fe *protocol.FieldError
	var u *UnsupportedError
	switch {
	case errors.As(err, &fe):
		we = &protocol.WireError{Type: fe.Type, Message: fe.Error()}
	case errors.As(err, &e):
		we = &protocol.WireError{Type: string(e.Type), Message: e.Message}
	case errors.As(err, &u):
		we.Type = protocol.ErrTypeUnsupported
	}
	return protocol.Reply{Seq: seq, Error: we}
}

// ReplyError is the typed error of a failed reply, as a Driver method returns it: a canon type
// is an *emqerr.Error, UNSUPPORTED an *UnsupportedError, INTERNAL a *PortError (the port is
// alive and says it failed). ok is false for a type the protocol does not know.
func ReplyError(port, op string, we *protocol.WireError) (err error, ok bool) {
	t := emqerr.Type(we.Type)
	switch {
	case emqerr.Known(t):
		return &emqerr.Error{Type: t, Message: we.Message}, true
	case we.Type == protocol.ErrTypeUnsupported:
		return &UnsupportedError{Op: op, Message: we.Message}, true
	case we.Type == protocol.ErrTypeInternal:
		return &PortError{Port: port, Op: op, Reason: "answered INTERNAL: " + we.Message}, true
	}
	return nil, false
}

// RawCaller is a Driver that sends a request built field by field, as it is, with no check on
// the kit's side: the harness uses it to send what a typed call cannot (a field left out, null,
// the wrong JSON type, a value out of range). Fields are the request's members besides seq and
// op. The result is the reply's result, or the error a typed call would return.
type RawCaller interface {
	Raw(ctx context.Context, op string, fields map[string]json.RawMessage) (json.RawMessage, error)
}

// Raw sends a raw request to d: through d's own Raw when it has one (a subprocess port reads the
// line as it is), else through Dispatch, the kit's JSON layer, over d's typed methods.
func Raw(ctx context.Context, d Driver, op string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	if r, ok := d.(RawCaller); ok {
		return r.Raw(ctx, op, fields)
	}
	line, err := RawLine(1, op, fields)
	if err != nil {
		return nil, err
	}
	reply, _ := Dispatch(ctx, d, line)
	if reply.OK {
		return reply.Result, nil
	}
	if err, ok := ReplyError(d.Name(), op, reply.Error); ok {
		return nil, err
	}
	return nil, fmt.Errorf("drivers: %s answered the unknown error type %q", op, reply.Error.Type)
}

// RawRequest is one request of a pipeline: an op and its fields, sent as they are (RawCaller).
// With Line set it is that line instead, written as it is: a line that is not a request, which
// the port answers EMQARG under seq 0 in its turn (PROTOCOL.md B-285).
type RawRequest struct {
	Op     string
	Fields map[string]json.RawMessage
	Line   []byte
}

// Serve answers one RawRequest through d, on its own.
func Serve(ctx context.Context, d Driver, r RawRequest) (json.RawMessage, error) {
	if r.Line != nil {
		return Line(ctx, d, r.Line, 0)
	}
	return Raw(ctx, d, r.Op, r.Fields)
}

// RawReply is the answer to one RawRequest: its result, or the error a typed call would return.
type RawReply struct {
	Result json.RawMessage
	Err    error
}

// Pipeliner is a Driver with a conversation (a subprocess port): it writes every request of a
// pipeline before it reads a reply, so that a port holds several at once. The port protocol
// answers them in order (PROTOCOL.md Part B, B-1, B-280); a reply out of sequence ends the
// session with a *PortError, returned as the error.
type Pipeliner interface {
	Pipeline(ctx context.Context, reqs []RawRequest) ([]RawReply, error)
}

// Conversing is a driver whose port reads each request as it is written, ahead of the replies to
// those before it (a subprocess port): a request written behind a park has been read while the
// park runs. A Pipeliner without it (a front over the reference in-process) serves a pipeline
// one request at a time.
type Conversing interface {
	Conversing()
}

// Pipeline sends reqs to d at once when d is a Pipeliner; a driver without a conversation (the
// reference in-process) has nothing to hold in flight and serves them one by one through Raw.
func Pipeline(ctx context.Context, d Driver, reqs []RawRequest) ([]RawReply, error) {
	if p, ok := d.(Pipeliner); ok {
		return p.Pipeline(ctx, reqs)
	}
	return OneByOne(ctx, d, reqs)
}

// OneByOne serves reqs through Serve, each once the one before it answered.
func OneByOne(ctx context.Context, d Driver, reqs []RawRequest) ([]RawReply, error) {
	out := make([]RawReply, len(reqs))
	for i, r := range reqs {
		out[i].Result, out[i].Err = Serve(ctx, d, r)
	}
	return out, nil
}

// RawLine is the request line {"seq":seq,"op":op,<fields>}, fields in name order (a "seq" among
// fields is replaced).
func RawLine(seq uint64, op string, fields map[string]json.RawMessage) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(fields)+2)
	for k, v := range fields {
		m[k] = v
	}
	m["seq"] = json.RawMessage(fmt.Sprint(seq))
	m["op"], _ = json.Marshal(op)
	return json.Marshal(m)
}

func argErr(format string, a ...any) *emqerr.Error {
	return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf(format, a...)}
}

type opFunc func(ctx context.Context, d Driver, body []byte) (any, error)

// call adapts a Driver method with a result; the body was checked (protocol.Check) and its
// integers are plain decimals.
func call[A, R any](f func(Driver, context.Context, A) (R, error)) opFunc {
	return func(ctx context.Context, d Driver, body []byte) (any, error) {
		var a A
		if err := json.Unmarshal(body, &a); err != nil {
			return nil, argErr("arguments: %v", err)
		}
		return f(d, ctx, a)
	}
}

// call0 adapts a Driver method that answers only success.
func call0[A any](f func(Driver, context.Context, A) error) opFunc {
	return call(func(d Driver, ctx context.Context, a A) (protocol.Empty, error) {
		return protocol.Empty{}, f(d, ctx, a)
	})
}

var ops = map[string]opFunc{
	"hello":        call(Driver.Hello),
	"mint":         call(Driver.Mint),
	"key":          call(Driver.Key),
	"slot":         call(Driver.Slot),
	"enqueue":      call(Driver.Enqueue),
	"claim":        call(Driver.Claim),
	"lane_claim":   call(Driver.LaneClaim),
	"extend":       call(Driver.Extend),
	"complete":     call0(Driver.Complete),
	"retry":        call(Driver.Retry),
	"fail":         call0(Driver.Fail),
	"checkpoint":   call0(Driver.Checkpoint),
	"reap":         call(Driver.Reap),
	"promote":      call(Driver.Promote),
	"morgue":       call(Driver.Morgue),
	"revive":       call(Driver.Revive),
	"purge":        call(Driver.Purge),
	"pause":        call0(Driver.Pause),
	"resume":       call0(Driver.Resume),
	"lane_pause":   call0(Driver.LanePause),
	"lane_resume":  call0(Driver.LaneResume),
	"lane_ceiling": call0(Driver.LaneCeiling),
	"park":         call(Driver.Park),
	"reconnect": func(ctx context.Context, d Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Reconnect(ctx)
	},
	"clock": call0(func(d Driver, ctx context.Context, a protocol.ClockArgs) error {
		c, ok := d.(Clocker)
		if !ok {
			return &UnsupportedError{Op: "clock", Message: "this port's minter clock cannot be scripted"}
		}
		return c.Clock(ctx, a)
	}),
	"close": func(ctx context.Context, d Driver, _ []byte) (any, error) {
		return protocol.Empty{}, d.Close(ctx)
	},
	"enqueue_batch":  batch(Batcher.EnqueueBatch),
	"claim_batch":    batch(Batcher.ClaimBatch),
	"complete_batch": batch(Batcher.CompleteBatch),
}

// batch adapts a Batcher method; a Driver that is none answers UNSUPPORTED.
func batch[A, R any](f func(Batcher, context.Context, A) (R, error)) opFunc {
	return call(func(d Driver, ctx context.Context, a A) (R, error) {
		b, ok := d.(Batcher)
		if !ok {
			var zero R
			return zero, &UnsupportedError{Op: "batch", Message: "this port has no batch ops"}
		}
		return f(b, ctx, a)
	})
}

// LineSender is a Driver with a conversation (a subprocess port) that can write a line as it
// is: one that is not a request, whose answer the harness holds to PROTOCOL.md B-285, or a
// request written by hand in a form the typed calls never produce (a seq written 1e3, an op
// that is not a string). The error is the typed refusal a call returns, or a *PortError when
// the answer breaks the conversation.
type LineSender interface {
	Line(ctx context.Context, text []byte, seq uint64) (json.RawMessage, error)
}

// Line writes text to d as one line: through d's own Line when it has one, else through
// Dispatch, the JSON layer the in-process reference serves on stdio (internal/portserver). seq
// is the seq the answer must carry: 0 for a line that is not a request (the answer must then
// fail), else the request's own. It returns the answer's result, or its error as a call's.
func Line(ctx context.Context, d Driver, text []byte, seq uint64) (json.RawMessage, error) {
	if l, ok := d.(LineSender); ok {
		return l.Line(ctx, text, seq)
	}
	reply, _ := Dispatch(ctx, d, text)
	switch {
	case reply.Seq != seq:
		return nil, &PortError{Port: d.Name(), Op: "line", Reason: fmt.Sprintf("answered seq %d to the line %s (want %d)", reply.Seq, text, seq)}
	case reply.OK && seq == 0:
		return nil, &PortError{Port: d.Name(), Op: "line", Reason: "answered ok: true to a line that is not a request"}
	case reply.OK:
		return reply.Result, nil
	}
	if err, ok := ReplyError(d.Name(), "line", reply.Error); ok {
		return nil, err
	}
	return nil, &PortError{Port: d.Name(), Op: "line", Reason: "answered the unknown error type " + reply.Error.Type}
}
