package contracts

import (
	"strings"
	"testing"

	"github.com/echomq/kit/lua"
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
	w := newLaw(b, nil, func(c string) bool { return c == "kit" }, func([]string) ([]string, error) { return nil, nil })
	fence := "p|EVALSHA " + b.MustScript(lua.Fence).SHA1 + " 1 {emq}:bundle " + lua.Version + " " + b.Digest()
	claim := b.MustScript(lua.Claim).SHA1
	claimCall := "p|EVALSHA " + claim + " 6 emq:{q}:pending emq:{q}:active emq:{q}:meta emq:{q}:wake emq:{q}:ckpt emq:{q}:ring 100"
	job := "emq:{q}:job:JOB0000000000A"
	ok := [][]string{
		{"p|HELLO 2", fence, claimCall, "lua|ZPOPMIN emq:{q}:pending", "lua|HINCRBY " + job + " attempts 1", "lua|TIME"},
		{"p|HELLO 2", "p|SCRIPT LOAD src", fence, "p|SET {emq}:minter:7 owner NX PX 30000", "p|BLPOP emq:{q}:wake 2", "p|HGETALL " + job},
		{"kit|FLUSHALL", "kit|EVAL x 0", "p|HELLO 2", fence},
	}
	for i, c := range ok {
		if vs := w.check(lines(c...)); len(vs) != 0 {
			t.Errorf("clean capture %d: %v", i, vs)
		}
	}
	bad := map[string][]string{
		"first command was":          {"p|PING"},
		"before the fence":           {"p|HELLO 2", "p|SET {emq}:minter:7 o NX PX 1", fence},
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
	}
	for want, c := range bad {
		vs := w.check(lines(c...))
		found := false
		for _, v := range vs {
			found = found || strings.Contains(v.What, want)
		}
		if !found {
			t.Errorf("%q: not reported; got %v", want, vs)
		}
	}
}
