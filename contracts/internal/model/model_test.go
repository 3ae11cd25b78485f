package model

import (
	"testing"

	"github.com/echomq/kit/reference/keys"
)

// TestLifecycle walks one job through the state table on the model alone: enqueue, claim,
// a stale complete, a retry back to pending, a claim with the next token, a complete; the
// keyspace after each step is what the canon's table leaves.
func TestLifecycle(t *testing.T) {
	q, err := keys.Queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	m := New(q)
	now := Span{Lo: 1000, Hi: 1002}
	id := "JOB00000000001"
	step := func(o Op, want string) {
		t.Helper()
		if got := m.Apply(o, id, now.Lo, now); got != want {
			t.Fatalf("%s: reply %s, want %s", o, got, want)
		}
	}
	step(Op{Kind: "enqueue", Data: "p"}, "created true")
	step(Op{Kind: "enqueue", Data: "p"}, "created false")
	ks := m.Keyspace()
	if ks[q.Prefix()+"job:"+id].Hash["state"] != "pending" || len(ks[q.Prefix()+"pending"].Zset) != 1 || ks[q.Prefix()+"wake"].Typ != "list" {
		t.Fatalf("after enqueue: %v", ks)
	}
	step(Op{Kind: "claim", Lease: 100}, `{id JOB00000000001 payload "p" token 1 checkpoint nil lane ""}`)
	step(Op{Kind: "complete", Tok: 1}, "EMQSTALE") // token 2 was never issued
	step(Op{Kind: "retry", Max: 3, Text: "boom"}, "retried")
	step(Op{Kind: "claim", Lease: 100}, `{id JOB00000000001 payload "p" token 2 checkpoint nil lane ""}`)
	step(Op{Kind: "complete"}, "ok")
	ks = m.Keyspace()
	delete(ks, q.Prefix()+"wake")
	if len(ks) != 0 {
		t.Fatalf("a completed job leaves keys behind: %v", ks)
	}
}

// TestKeyspaceDiff: a score inside the model's window agrees, one outside does not, and a key
// the model does not hold is reported.
func TestKeyspaceDiff(t *testing.T) {
	want := map[string]Val{"k": {Typ: "zset", Zset: map[string]Span{"a": {Lo: 10, Hi: 20}}}}
	if d := KeyspaceDiff(want, map[string]Val{"k": {Typ: "zset", Zset: map[string]Span{"a": {Lo: 15, Hi: 15}}}}); d != "" {
		t.Errorf("a score inside the window: %s", d)
	}
	if d := KeyspaceDiff(want, map[string]Val{"k": {Typ: "zset", Zset: map[string]Span{"a": {Lo: 25, Hi: 25}}}}); d == "" {
		t.Error("a score outside the window agreed")
	}
	if d := KeyspaceDiff(want, map[string]Val{"k": want["k"], "x": {Typ: "list", List: []string{"1"}}}); d == "" {
		t.Error("an unexpected key agreed")
	}
}
