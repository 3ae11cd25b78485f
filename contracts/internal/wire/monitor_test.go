package wire

import (
	"strings"
	"testing"
)

func TestParseMonitorLine(t *testing.T) {
	l, ok := parseMonitorLine(`1795949140.477006 [0 127.0.0.1:34772] "SET" "load" "a \"q\" b\\c\n\x00\xff end" "" "k"`)
	if !ok || l.Client != "127.0.0.1:34772" {
		t.Fatalf("%+v %v", l, ok)
	}
	want := []string{"SET", "load", "a \"q\" b\\c\n\x00\xff end", "", "k"}
	if strings.Join(l.Args, "|") != strings.Join(want, "|") || len(l.Args) != len(want) {
		t.Fatalf("args %q, want %q", l.Args, want)
	}
	// Valkey 8.1.1 leaves double quotes unescaped.
	l, _ = parseMonitorLine(`1.2 [0 127.0.0.1:1] "ECHO" "a"b\\c\nd" "x y" ""`)
	if want := []string{"ECHO", "a\"b\\c\nd", "x y", ""}; strings.Join(l.Args, "|") != strings.Join(want, "|") {
		t.Fatalf("args %q, want %q", l.Args, want)
	}
	src := "-- up to \"}:\") then\nlocal x = \" \" .. '\\'"
	l, _ = parseMonitorLine(`1.2 [0 127.0.0.1:1] "script" "load" "-- up to "}:") then\nlocal x = " " .. '\\'"`)
	if len(l.Args) != 3 || l.Args[2] != src || l.Cmd() != "SCRIPT" {
		t.Fatalf("script load args %q", l.Args)
	}
	l, ok = parseMonitorLine(`1795949140.477027 [0 lua] "HSET" "emq:{q}:job:x" "x" "v"`)
	if !ok || l.Client != "lua" || len(l.Args) != 4 {
		t.Fatalf("%+v", l)
	}
}
