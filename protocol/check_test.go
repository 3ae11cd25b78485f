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
