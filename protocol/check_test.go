package protocol

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestCheckMessagesReadRight: a null field's refusal names its kind with the right article
// ("want an integer", "want a string").
func TestCheckMessagesReadRight(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		want string
	}{
		{KindInt, "f is null: want an integer"},
		{KindString, "f is null: want a string"},
		{KindAddr, "f is null: want a host:port"},
		{KindBool, "f is null: want a boolean"},
		{KindJobID, "f is null: want a job id"},
		{0, "f is null: want an unknown"},
	} {
		_, err := Field{Name: "f", Kind: c.kind}.check("op", json.RawMessage("null"))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Reason != c.want {
			t.Errorf("a null %s: %v, want %q", c.kind, err, c.want)
		}
	}
}

// TestShapeBeforeEmptyName: a request whose shape is wrong is EMQARG whatever else is wrong
// with it, an empty name included, wherever the two stand in the field list (Part B [B-100]).
func TestShapeBeforeEmptyName(t *testing.T) {
	for _, c := range []struct {
		op, req, want string
	}{
		{"enqueue", `{"queue":"","payload_b64":"not base64!"}`, "EMQARG"},
		{"complete", `{"queue":"","id":"JOB00000000001","token":"7"}`, "EMQARG"},
		{"lane_pause", `{"queue":"q","lane":""}`, "EMQKEY"},
		{"complete_batch", `{"queue":"q","jobs":[{"id":"","token":1},{"id":"JOB00000000001","token":null}]}`, "EMQARG"},
		{"complete_batch", `{"queue":"q","jobs":[{"id":"","token":1}]}`, "EMQKEY"},
		{"enqueue", `{"queue":"","payload_b64":"aGk="}`, "EMQKEY"},
	} {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.req), &fields); err != nil {
			t.Fatal(err)
		}
		_, err := Check(c.op, fields)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Type != c.want {
			t.Errorf("%s %s: %v, want %s", c.op, c.req, err, c.want)
		}
	}
}
