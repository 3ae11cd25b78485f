package mutant

import (
	"context"
	"errors"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// newestFirst serves a run of requests it holds at once newest first, as a port that keeps the
// lines it has read on a stack instead of a queue would, and answers them in the order they came
// (PROTOCOL.md B-280): with one request in flight it is the reference.
type newestFirst struct{ *sessionFront }

func (f newestFirst) Pipeline(ctx context.Context, reqs []drivers.RawRequest) ([]drivers.RawReply, error) {
	out := make([]drivers.RawReply, len(reqs))
	for i := len(reqs) - 1; i >= 0; i-- {
		out[i].Result, out[i].Err = drivers.Raw(ctx, f.sessionFront, reqs[i].Op, reqs[i].Fields)
	}
	return out, nil
}

// noRedial never replaces a connection it lost: once an enqueue fails with anything but a canon
// error (the server dropped the connection), every later one answers that error.
type noRedial struct {
	*sessionFront
	lost *error
}

func (f noRedial) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if *f.lost != nil {
		return protocol.EnqueueResult{}, *f.lost
	}
	r, err := f.sessionFront.Enqueue(ctx, a)
	var canon *emqerr.Error
	if err != nil && !errors.As(err, &canon) {
		*f.lost = err
	}
	return r, err
}

// inFlightMutants break the conversation: under requests in flight, on its largest lines, after
// the server dropped its connections.
var inFlightMutants = []Spec{
	{Name: "lost-connection-never-redialled", Contract: "C01", Rule: "dropped-connection", Defect: "a connection the server dropped is never replaced: every request after the loss answers INTERNAL",
		Go: front(func(d drivers.Driver) drivers.Driver { return noRedial{&sessionFront{Driver: d}, new(error)} })},
	{Name: "line-cap-1mib", Contract: "C06", Rule: "largest-bytes", Defect: "a request carrying more than 1 MiB of base64 (a payload or a checkpoint) is refused EMQARG, as a port reading lines into a 1 MiB buffer would",
		Go: front(func(d drivers.Driver) drivers.Driver { return lineCap{&sessionFront{Driver: d}} })},
	{Name: "requests-served-newest-first", Contract: "C01", Rule: "in-flight", Defect: "requests read together are served newest first (a stack of lines, not a queue), their replies still written in order",
		Go: front(func(d drivers.Driver) drivers.Driver { return newestFirst{&sessionFront{Driver: d}} })},
}

// lineCap refuses a request whose bytes exceed a buffer of its own, as a port that reads lines
// into a fixed 1 MiB buffer would (PROTOCOL.md B-281 asks for 4 MiB).
type lineCap struct{ *sessionFront }

const lineCapBytes = 1 << 20

func (f lineCap) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if len(a.PayloadB64) > lineCapBytes {
		return protocol.EnqueueResult{}, &emqerr.Error{Type: emqerr.TypeArg, Message: "request line over 1 MiB"}
	}
	return f.sessionFront.Enqueue(ctx, a)
}

func (f lineCap) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error {
	if len(a.DataB64) > lineCapBytes {
		return &emqerr.Error{Type: emqerr.TypeArg, Message: "request line over 1 MiB"}
	}
	return f.sessionFront.Checkpoint(ctx, a)
}
