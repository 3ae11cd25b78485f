package domains

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// byLabel is a field's inputs by label; a label given twice fails t.
func byLabel(t *testing.T, ins []Input) map[string]Input {
	t.Helper()
	out := map[string]Input{}
	for _, in := range ins {
		if _, dup := out[in.Label]; dup {
			t.Errorf("two inputs labelled %q", in.Label)
		}
		out[in.Label] = in
	}
	return out
}

// TestIntegerEdges: an integer field's inputs hold both edges of its range from both sides, and
// absence follows the requirement.
func TestIntegerEdges(t *testing.T) {
	req := byLabel(t, Inputs(protocol.Field{Name: "n", Kind: protocol.KindInt, Required: true, Min: 5, Max: 9}))
	for label, want := range map[string]struct {
		raw    string
		answer Answer
	}{
		"absent": {"", RefuseArg}, "null": {"null", RefuseArg}, "min": {"5", Accept}, "min-1": {"4", RefuseArg},
		"max": {"9", Accept}, "max+1": {"10", RefuseArg}, "0": {"0", RefuseArg}, "-1": {"-1", RefuseArg},
		"a string": {`"5"`, RefuseArg}, "a fraction": {"5.5", RefuseArg}, "min in exponent form": {"5e0", Accept},
	} {
		in, ok := req[label]
		switch {
		case !ok:
			t.Errorf("no input %q", label)
		case string(in.Raw) != want.raw || in.Want != want.answer:
			t.Errorf("%s: %s answered %s, want %s answered %s", label, in.Raw, in.Want, want.raw, want.answer)
		}
	}
	opt := byLabel(t, Inputs(protocol.Field{Name: "d", Kind: protocol.KindInt, Min: 0, Max: 9, Zero: "now"}))
	if in := opt["absent"]; in.Want != Accept || in.Raw != nil {
		t.Errorf("an optional field's absence: %s %s, want left out and accepted", in.Raw, in.Want)
	}
	if in, ok := opt["0 (now)"]; !ok || in.Want != Accept {
		t.Errorf("a documented 0 is accepted: %+v", in)
	}
}

// TestListInputs: a list's own edges, then each item field's inputs inside a one-item list.
func TestListInputs(t *testing.T) {
	f := protocol.Field{Name: "jobs", Kind: protocol.KindList, Required: true, Min: 1, Max: 3,
		Items: []protocol.Field{{Name: "id", Kind: protocol.KindJobID, Required: true}}}
	ins := byLabel(t, ListInputs(f, map[string]any{"id": "JOB00000000001"}))
	var items []map[string]any
	if err := json.Unmarshal(ins["max+1"].Raw, &items); err != nil || len(items) != 4 || ins["max+1"].Want != RefuseArg {
		t.Errorf("max+1: %s %s, want 4 items refused", ins["max+1"].Raw, ins["max+1"].Want)
	}
	if in := ins["[0].id 13 bytes"]; in.Want != RefuseKey || string(in.Raw) != `[{"id":"JOB0000000001"}]` {
		t.Errorf("an item field's input: %s %s", in.Raw, in.Want)
	}
}

// TestRequest: a request leaves the field under test out, or carries it raw.
func TestRequest(t *testing.T) {
	base := map[string]any{"queue": "q", "n": 1}
	if r := Request(base, "n", nil); len(r) != 1 || string(r["queue"]) != `"q"` {
		t.Errorf("left out: %v", r)
	}
	if r := Request(base, "n", json.RawMessage("null")); string(r["n"]) != "null" {
		t.Errorf("raw: %v", r)
	}
}

// TestClassify: a canon refusal is read by its type; anything else the port answers is not one
// of the documents' answers.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Answer
	}{
		{nil, Accept},
		{fmt.Errorf("enqueue: %w", emqerr.Arg), RefuseArg},
		{emqerr.Key, RefuseKey},
		{emqerr.Kind, RefuseKind},
		{emqerr.Stale, Accept}, // the input was in its domain; the op's own refusal followed
		{&drivers.UnsupportedError{Message: "no"}, Misbehaved},
		{errors.New("broken pipe"), Misbehaved},
	} {
		if got, _ := Classify(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}
