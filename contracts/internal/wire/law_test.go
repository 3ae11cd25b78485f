package wire

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/keys"
)

// lines builds a capture from "client|arg arg …" specs; lua lines attach to the last EVALSHA.
func lines(specs ...string) []Line {
	var out []Line
	last := -1
	for i, s := range specs {
		who, args, _ := strings.Cut(s, "|")
		l := Line{Seq: i, Client: who, Args: strings.Fields(args), Script: -1}
		if who == "lua" {
			l.Script = last
		} else if l.Cmd() == "EVALSHA" || l.Cmd() == "EVAL" {
			last = i
		}
		out = append(out, l)
	}
	return out
}

func TestWireLaw(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	w := NewLaw(b, nil, func(l Line) bool { return l.Client == "kit" }, func([]string) ([]string, error) { return nil, nil })
	fence := "p|EVALSHA " + b.MustScript(lua.Fence).SHA1 + " 1 {emq}:bundle " + lua.Version + " " + b.Digest()
	claim := b.MustScript(lua.Claim).SHA1
	claimCall := "p|EVALSHA " + claim + " 6 emq:{q}:pending emq:{q}:active emq:{q}:meta emq:{q}:wake emq:{q}:ckpt emq:{q}:ring 100"
	job := "emq:{q}:job:JOB0000000000A"
	ok := [][]string{
		{"p|HELLO 2", fence, claimCall, "lua|ZPOPMIN emq:{q}:pending", "lua|HINCRBY " + job + " attempts 1", "lua|TIME"},
		{"p|HELLO 2", "p|SCRIPT LOAD src", fence, "p|SET {emq}:minter:7 owner NX PX 30000", "p|BLPOP emq:{q}:wake 2", "p|HGETALL " + job},
		{"kit|FLUSHALL", "kit|EVAL x 0", "p|HELLO 2", fence},
		{"p|HELLO 2", "p|HELLO 2", fence}, // a refused server's connection, its address reused
	}
	for i, c := range ok {
		if vs := w.Check(lines(c...)); len(vs) != 0 {
			t.Errorf("clean capture %d: %v", i, vs)
		}
	}
	bad := map[string][]string{
		"first command was":          {"p|PING"},
		"before the fence":           {"p|HELLO 2", "p|SET {emq}:minter:7 o NX PX 1", fence},
		"HELLO without protocol 2":   {"p|HELLO 2", "p|HELLO 3", fence},
		"never allowed":              {"p|HELLO 2", fence, "p|EVAL return 0"},
		"not a script of the bundle": {"p|HELLO 2", fence, "p|EVALSHA 0123456789012345678901234567890123456789 0"},
		"loose HSET":                 {"p|HELLO 2", fence, "p|HSET " + job + " state active"},
		"does not parse":             {"p|HELLO 2", fence, "p|HGET other:key f"},
		"only blocking pop":          {"p|HELLO 2", fence, "p|BLPOP emq:{q}:pending 1"},
		"SCRIPT FLUSH":               {"p|HELLO 2", fence, "p|SCRIPT FLUSH"},
		"transaction":                {"p|HELLO 2", fence, "p|MULTI"},
		"did not declare":            {"p|HELLO 2", fence, claimCall, "lua|ZADD emq:{q}:dead 0 x"},
		"outside the queue":          {"p|HELLO 2", fence, claimCall, "lua|HGET emq:{other}:job:JOB0000000000A payload"},
		"is the key's prefix":        {"p|HELLO 2", fence, "p|EVALSHA " + claim + " 6 emq:{q}:pending emq:{q}:active emq:{q}:meta emq:{q}:wake emq:{q}:ckpt emq:{q}:ring emq:{q}:job:", "lua|HINCRBY " + job + " attempts 1"},
		"is the key's id or lane":    {"p|HELLO 2", fence, "p|EVALSHA " + claim + " 1 emq:{q}:pending JOB0000000000A", "lua|HGET " + job + " state"},
		"key material in ARGV[2]":    {"p|HELLO 2", fence, "p|EVALSHA " + claim + " 1 " + job + " JOB0000000000A emq:{q}:job:"},
		"answer different slots":     {"p|HELLO 2", fence, "p|EVALSHA " + claim + " 2 emq:{q}:pending emq:{r}:active"},
		"the minter keys take only":  {"p|HELLO 2", fence, "p|EXPIRE {emq}:minter:7 30"},
	}
	for want, c := range bad {
		vs := w.Check(lines(c...))
		found := false
		for _, v := range vs {
			found = found || strings.Contains(v.What, want)
		}
		if !found {
			t.Errorf("%q: not reported; got %v", want, vs)
		}
	}
}

// clusterLines builds a cluster capture from "node|client|arg arg …" specs, stamped 1 ms apart in
// order; lua lines attach to their node's last EVALSHA.
func clusterLines(specs ...string) []Line {
	var out []Line
	last := map[string]int{}
	for i, s := range specs {
		node, rest, _ := strings.Cut(s, "|")
		who, args, _ := strings.Cut(rest, "|")
		l := Line{Seq: i, Client: who, Args: strings.Fields(args), Script: -1, Node: node, At: int64(i) * 1000}
		if who == "lua" {
			l.Script = last[node]
		} else if l.Cmd() == "EVALSHA" {
			last[node] = i
		}
		out = append(out, l)
	}
	return out
}

// TestClusterWireLaw: each cluster addition to the wire law passes a clean cluster capture and
// fails a capture that breaks it (cluster-one-slot, cluster-owner, cluster-no-redirect-left, and
// the fence a node redirected to the {emq} slot's owner).
func TestClusterWireLaw(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Three primaries in equal slot runs, as the kit starts them: A, B, C.
	owner := func(slot uint16) string { return string(rune('A' + int(slot)/5462)) }
	w := NewLaw(b, nil, func(l Line) bool { return l.Client == "kit" }, func([]string) ([]string, error) { return nil, nil })
	w.cluster = &clusterView{owner: owner}
	emq := owner(keys.Slot(keys.Bundle()))
	var other string // a primary that does not own {emq}
	for _, n := range []string{"A", "B", "C"} {
		if n != emq {
			other = n
			break
		}
	}
	queueOn := func(node string) string {
		for _, q := range []string{"orders", "back", "billing", "fills", "gone", "r", "q"} {
			if owner(keys.Slot("emq:{"+q+"}:pending")) == node {
				return q
			}
		}
		t.Fatalf("no queue on %s", node)
		return ""
	}
	qe, qo := queueOn(emq), queueOn(other)
	fence := "|EVALSHA " + b.MustScript(lua.Fence).SHA1 + " 1 {emq}:bundle " + lua.Version + " " + b.Digest()
	claim := b.MustScript(lua.Claim).SHA1
	call := func(q string) string {
		return "|EVALSHA " + claim + " 6 emq:{" + q + "}:pending emq:{" + q + "}:active emq:{" + q + "}:meta emq:{" + q + "}:wake emq:{" + q + "}:ckpt emq:{" + q + "}:ring 100"
	}
	clean := []string{
		emq + "|p1|HELLO 2", emq + "|p1" + fence, // the owner's connection fences itself
		other + "|m|HELLO 2", other + "|m|CLUSTER SHARDS", // a map read needs no fence
		emq + "|p1" + fence, // the fence of the other node's connection, run at the owner
		other + "|p2|HELLO 2", other + "|p2|SCRIPT LOAD src",
		other + "|p2" + call(qo), "lua|ZPOPMIN emq:{" + qo + "}:pending",
		emq + "|p1" + call(qe),
		other + "|p2|ASKING", other + "|p2" + call(qe), // after ASKING, a slot the node imports
	}
	// The capture's lua line belongs to node other.
	clean[8] = other + "|" + clean[8]
	lines := clusterLines(clean...)
	if vs := w.Check(lines); len(vs) != 0 {
		t.Fatalf("clean cluster capture: %v", vs)
	}
	if vs := w.RedirectsLeft(lines, map[string]map[string]int64{emq: {}, other: {"MOVED": 1}}); len(vs) != 0 {
		t.Fatalf("one redirected handshake fence: %v", vs)
	}
	bad := map[string]struct {
		lines []string
		rule  RuleID
	}{
		"answer different slots":       {[]string{emq + "|p|HELLO 2", emq + "|p" + fence, emq + "|p|EVALSHA " + claim + " 2 emq:{" + qe + "}:pending emq:{" + qo + "}:active"}, RuleClusterOneSlot},
		"outside the slot of its KEYS": {[]string{emq + "|p|HELLO 2", emq + "|p" + fence, emq + "|p" + call(qe), emq + "|lua|HGET emq:{" + qo + "}:job:JOB0000000000A state"}, RuleClusterOneSlot},
		"which does not own it":        {[]string{emq + "|p|HELLO 2", emq + "|p" + fence, emq + "|p" + call(qo)}, RuleClusterOwner},
		"no fence run on the {emq}":    {[]string{other + "|p|HELLO 2", other + "|p" + call(qo)}, RuleFence},
		"CLUSTER RESET":                {[]string{other + "|p|HELLO 2", other + "|p|CLUSTER RESET"}, RuleCommands},
	}
	for want, c := range bad {
		vs := w.Check(clusterLines(c.lines...))
		found := false
		for _, v := range vs {
			found = found || (strings.Contains(v.What, want) && v.Rule == c.rule)
		}
		if !found {
			t.Errorf("%q (%s): not reported; got %v", want, c.rule, vs)
		}
	}
	// One fence at the owner cannot stand for two redirected connections.
	two := clusterLines(emq+"|p1|HELLO 2", emq+"|p1"+fence, emq+"|p1"+fence, other+"|p2|HELLO 2", other+"|p2"+call(qo), other+"|p3|HELLO 2", other+"|p3"+call(qo))
	if vs := w.Check(two); len(vs) != 1 || vs[0].Rule != RuleFence {
		t.Errorf("two redirected connections, one fence at the owner: %v", vs)
	}
	stats := map[string]map[string]map[string]int64{
		"CROSSSLOT": {other: {"CROSSSLOT": 1}},
		"ASK":       {other: {"ASK": 1}},
		"MOVED 2":   {other: {"MOVED": 2}},
		"MOVED 1":   {emq: {"MOVED": 1}},
	}
	for want, st := range stats {
		vs := w.RedirectsLeft(lines, st)
		if len(vs) != 1 || vs[0].Rule != RuleClusterNoLeft || !strings.Contains(vs[0].What, strings.Fields(want)[0]) {
			t.Errorf("errorstats %v: got %v", st, vs)
		}
	}
	// A standalone law has no cluster rules.
	w.cluster = nil
	if vs := w.RedirectsLeft(lines, stats["ASK"]); len(vs) != 0 {
		t.Errorf("standalone: %v", vs)
	}
}

func TestParseErrorstats(t *testing.T) {
	m := parseErrorstats("# Errorstats\r\nerrorstat_MOVED:count=3\r\nerrorstat_CROSSSLOT:count=1\r\n")
	if m["MOVED"] != 3 || m["CROSSSLOT"] != 1 || len(m) != 2 {
		t.Fatalf("%v", m)
	}
}

// TestReloadsOnlyAfterNoscript: an EVALSHA retried after a SCRIPT LOAD, its first send having
// run or its script held by the node (so no NOSCRIPT), is reported; a load and retry after a
// NOSCRIPT are not, pipelined ones included (another call's retry behind a call that ran), nor
// a preload with no retry after it.
func TestReloadsOnlyAfterNoscript(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	w := NewLaw(b, nil, func(l Line) bool { return l.Client == "kit" }, nil)
	sum := sha1.Sum([]byte("src"))
	call, load, ran := "p|EVALSHA "+hex.EncodeToString(sum[:])+" 1 emq:{q}:pending", "p|SCRIPT LOAD src", "lua|ZCARD emq:{q}:pending"
	other := "p|EVALSHA " + hex.EncodeToString(sum[:]) + " 1 emq:{r}:pending"
	clean := [][]string{
		{call, load, call, ran},
		{call, call, load, call, ran, load, call, ran},
		{call, ran, load, "p|SCRIPT LOAD other", call, ran},
		{call, ran, "kit|SCRIPT LOAD src", call, ran},
		{"kit|SCRIPT LOAD src", "kit|SCRIPT FLUSH", call, load, call, ran},
		// Pipelined: another call's NOSCRIPT, long answered, is reloaded and retried right
		// behind a call of the same script that ran; the retry is not that call's.
		{other, call, ran, load, other, ran},
		// Pipelined identical calls (a park's claims) right after a flush: the first meets
		// NOSCRIPT, the second runs once a load by another connection, and the first's retry
		// follows its own load, the same keys and arguments as the call that ran.
		{call, "q|SCRIPT LOAD src", call, ran, load, call, ran},
	}
	for i, c := range clean {
		if vs := w.reloads(lines(c...)); len(vs) != 0 {
			t.Errorf("clean capture %d: %v", i, vs)
		}
	}
	bad := [][]string{
		{call, load, call, ran, call, ran, load, call},
		{"p|HGET emq:{q}:job:JOB0000000000A state", call, ran, load, call, ran},
		// The script was held (the kit loaded it): the first send answered something other
		// than NOSCRIPT without touching a key (a canon refusal), and the port reloaded anyway.
		{"kit|SCRIPT LOAD src", call, load, call},
		{call, ran, "p|GET x", call, load, call},
	}
	for i, c := range bad {
		if vs := w.reloads(lines(c...)); len(vs) != 1 || !strings.Contains(vs[0].What, "no NOSCRIPT asked for") {
			t.Errorf("capture %d: want one retry reported, got %v", i, vs)
		}
	}
}

// TestHelloUnseen: a connection whose HELLO may have run while the server fed no MONITOR may
// show the fence first; anything else first is still reported, and other connections are held
// to HELLO first as before.
func TestHelloUnseen(t *testing.T) {
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	w := NewLaw(b, nil, func(l Line) bool { return l.Client == "kit" }, func([]string) ([]string, error) { return nil, nil })
	w.HelloUnseen("", "p")
	fence := "|EVALSHA " + b.MustScript(lua.Fence).SHA1 + " 1 {emq}:bundle " + lua.Version + " " + b.Digest()
	if vs := w.Check(lines("p" + fence)); len(vs) != 0 {
		t.Errorf("the fence first on a connection whose HELLO went unseen: %v", vs)
	}
	for _, c := range [][]string{{"p|PING"}, {"q" + fence}} {
		if vs := w.Check(lines(c...)); len(vs) != 1 || !strings.Contains(vs[0].What, "first command was") {
			t.Errorf("%v: want one first-command violation, got %v", c, vs)
		}
	}
}
