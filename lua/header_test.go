package lua

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// The header parser reads fixed and repeated KEYS/ARGV lines and refuses malformed groups.
func TestReadHeaderRepeated(t *testing.T) {
	const tail = "-- Reply: x\n-- Errors: y\nreturn 1\n"
	good := "-- KEYS[1] -> emq:{q}:active\n-- KEYS[2+k] -> emq:{q}:job:<id>\n" +
		"-- ARGV[1] -> lease_ms (integer 1..1e14)\n-- ARGV[2+2k] -> id\n-- ARGV[3+2k] -> token\n" + tail
	s := Script{Name: "good", Source: good}
	if err := s.readHeader(); err != nil {
		t.Fatal(err)
	}
	if !s.Batch() || !slices.Equal(s.Keys, []string{"emq:{q}:active"}) || !slices.Equal(s.RepKeys, []string{"emq:{q}:job:<id>"}) ||
		!slices.Equal(s.Args, []string{"lease_ms (integer 1..1e14)"}) || !slices.Equal(s.RepArgs, []string{"id", "token"}) {
		t.Fatalf("parsed %+v", s)
	}
	single := Script{Name: "single", Source: "-- KEYS[1] -> emq:{q}:meta\n-- ARGV[1] -> x\n" + tail}
	if err := single.readHeader(); err != nil || single.Batch() {
		t.Fatalf("single-job header: %v, batch %v", err, single.Batch())
	}
	for name, hdr := range map[string]string{
		"gap":            "-- KEYS[1] -> a\n-- KEYS[3+k] -> b\n-- ARGV[1+k] -> c\n",
		"fixed after":    "-- KEYS[1+k] -> b\n-- KEYS[2] -> a\n-- ARGV[1+k] -> c\n",
		"stride short":   "-- KEYS[1] -> a\n-- KEYS[2+k] -> b\n-- ARGV[1+2k] -> c\n",
		"strides differ": "-- KEYS[1] -> a\n-- KEYS[2+k] -> b\n-- ARGV[1+2k] -> c\n-- ARGV[2+3k] -> d\n",
		"keys only":      "-- KEYS[1] -> a\n-- KEYS[2+k] -> b\n-- ARGV[1] -> c\n",
		"args only":      "-- KEYS[1] -> a\n-- ARGV[1+k] -> c\n",
		"no fixed keys":  "-- KEYS[1+k] -> b\n-- ARGV[1+k] -> c\n",
	} {
		s := Script{Name: name, Source: hdr + tail}
		if err := s.readHeader(); err == nil {
			t.Errorf("%s: header accepted: %+v", name, s)
		}
	}
	// A malformed header fails the whole bundle load.
	_, err := load(fstest.MapFS{"bad.lua": {Data: []byte("-- KEYS[1+k] -> b\n-- ARGV[1+k] -> c\n" + tail)}})
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("load of a bad header: %v", err)
	}
}
