package mutant

import (
	"context"

	"github.com/echomq/kit/drivers"
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

// inFlightMutants break the conversation's order under requests in flight.
var inFlightMutants = []Spec{
	{Name: "requests-served-newest-first", Contract: "C01", Rule: "in-flight", Defect: "requests read together are served newest first (a stack of lines, not a queue), their replies still written in order",
		Go: front(func(d drivers.Driver) drivers.Driver { return newestFirst{&sessionFront{Driver: d}} })},
}
