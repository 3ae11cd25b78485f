package wire

import (
	"testing"

	"github.com/echomq/kit/reference/resp"
)

func bulks(ss ...string) resp.Value {
	v := resp.Value{Type: resp.Array}
	for _, s := range ss {
		v.Elems = append(v.Elems, resp.Value{Type: resp.BulkString, Str: []byte(s)})
	}
	return v
}

// TestContentIsCanonical: a snapshot renders each type so that equal contents compare equal as
// text (a hash's fields in any order) and any difference shows (a zset's order and scores, a
// list's order, a string's bytes).
func TestContentIsCanonical(t *testing.T) {
	if a, b := content("hash", bulks("b", "2", "a", "1")), content("hash", bulks("a", "1", "b", "2")); a != b || a != `"a"="1" "b"="2"` {
		t.Errorf("hash: %s | %s", a, b)
	}
	if got := content("zset", bulks("x", "0", "y", "1700000000123")); got != `"x"@0 "y"@1700000000123` {
		t.Errorf("zset: %s", got)
	}
	if got := content("list", bulks("1", "2")); got != `["1" "2"]` {
		t.Errorf("list: %s", got)
	}
	if got := content("string", resp.Value{Type: resp.BulkString, Str: []byte("a\x00b")}); got != `"a\x00b"` {
		t.Errorf("string: %s", got)
	}
	if got := content("stream", resp.Value{}); got != "(stream)" {
		t.Errorf("another type: %s", got)
	}
}
