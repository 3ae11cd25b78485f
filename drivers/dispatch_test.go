package drivers_test

import (
	"context"
	"testing"

	"github.com/echomq/kit/drivers"
)

// TestDispatchReadsSeq holds the JSON layer to Part B's seq (B-285, B-87, B-293): an unsigned
// integer up to 2⁵³ − 1 written any way JSON allows is the request's seq, anything else answers EMQARG under seq 0;
// an op that is not a string is UNSUPPORTED under the request's seq.
func TestDispatchReadsSeq(t *testing.T) {
	for _, c := range []struct {
		line, typ string
		seq       uint64
	}{
		{`{"seq":1e3,"op":"frobnicate"}`, "UNSUPPORTED", 1000},
		{`{"seq":1000.0,"op":"frobnicate"}`, "UNSUPPORTED", 1000},
		{`{"seq":10000e-1,"op":"frobnicate"}`, "UNSUPPORTED", 1000},
		{`{"seq":-0,"op":"frobnicate"}`, "UNSUPPORTED", 0},
		{`{"seq":9007199254740991,"op":"frobnicate"}`, "UNSUPPORTED", 1<<53 - 1},
		{`{"seq":9.007199254740991e15,"op":"frobnicate"}`, "UNSUPPORTED", 1<<53 - 1},
		{`{"seq":5,"op":5}`, "UNSUPPORTED", 5},
		{`{"seq":5,"op":["slot"]}`, "UNSUPPORTED", 5},
		{`{"seq":5}`, "UNSUPPORTED", 5},
		{`{"seq":9007199254740992,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":18446744073709551615,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":18446744073709551616,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":1.5,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":-1,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":"7","op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":null,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"seq":1e-999999999,"op":"frobnicate"}`, "EMQARG", 0},
		{`{"op":"frobnicate"}`, "EMQARG", 0},
	} {
		r, _ := drivers.Dispatch(context.Background(), nil, []byte(c.line))
		if r.OK || r.Error == nil || r.Error.Type != c.typ || r.Seq != c.seq {
			t.Errorf("%s: seq %d, %+v; want seq %d, %s", c.line, r.Seq, r.Error, c.seq, c.typ)
		}
	}
}
