// Package wire is the harness's plumbing, which never touches a clause: its own connections to
// the server under test (Admin: standalone, or every primary of a cluster, routed by slot), the
// keyspace read whole and rendered canonically (Snapshot), the MONITOR capture and the wire law.
package wire

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/resp"
)

// Snapshot renders the whole keyspace canonically: every key, its type and content (not TTLs).
// It costs a SCAN and two pipelined rounds (types, then contents), whatever the keyspace holds.
func (a *Admin) Snapshot(ctx context.Context) (map[string]string, error) {
	ks, err := a.Scan(ctx, "")
	if err != nil {
		return nil, err
	}
	types, vals, err := a.ReadKeys(ctx, ks)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ks))
	for i, k := range ks {
		out[k] = types[i] + " " + content(types[i], vals[i])
	}
	return out, nil
}

// ReadKeys reads every key of ks in two pipelined rounds: each one's type, then its whole
// content (HGETALL, ZRANGE WITHSCORES, LRANGE or GET; a key of another type, or gone, is
// read again with TYPE).
func (a *Admin) ReadKeys(ctx context.Context, ks []string) ([]string, []resp.Value, error) {
	typeCmds := make([][]any, len(ks))
	for i, k := range ks {
		typeCmds[i] = []any{"TYPE", k}
	}
	typeVals, err := a.round(ctx, "TYPE", typeCmds)
	if err != nil {
		return nil, nil, err
	}
	types := make([]string, len(ks))
	readCmds := make([][]any, len(ks))
	for i, v := range typeVals {
		k := ks[i]
		types[i] = v.Text()
		switch types[i] {
		case "hash":
			readCmds[i] = []any{"HGETALL", k}
		case "zset":
			readCmds[i] = []any{"ZRANGE", k, "0", "-1", "WITHSCORES"}
		case "list":
			readCmds[i] = []any{"LRANGE", k, "0", "-1"}
		case "string":
			readCmds[i] = []any{"GET", k}
		default:
			readCmds[i] = []any{"TYPE", k}
		}
	}
	vals, err := a.round(ctx, "read", readCmds)
	return types, vals, err
}

// round runs cmds where they belong, pipelined; a server error reply fails it too.
func (a *Admin) round(ctx context.Context, what string, cmds [][]any) ([]resp.Value, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	vs, err := a.Spread(ctx, cmds...)
	if err != nil {
		return nil, fmt.Errorf("keyspace %s: %w", what, err)
	}
	for i, v := range vs {
		if e := v.Err(); e != nil {
			return nil, fmt.Errorf("keyspace %s %v: %w", what, cmds[i], e)
		}
	}
	return vs, nil
}

// content is one key's content in a snapshot, from its type and its read reply.
func content(typ string, v resp.Value) string {
	switch typ {
	case "hash":
		var fs []string
		for i := 0; i+1 < len(v.Elems); i += 2 {
			fs = append(fs, strconv.Quote(string(v.Elems[i].Str))+"="+strconv.Quote(string(v.Elems[i+1].Str)))
		}
		sort.Strings(fs)
		return strings.Join(fs, " ")
	case "zset":
		var fs []string
		for i := 0; i+1 < len(v.Elems); i += 2 {
			f, _ := strconv.ParseFloat(string(v.Elems[i+1].Str), 64)
			fs = append(fs, fmt.Sprintf("%q@%d", string(v.Elems[i].Str), int64(f)))
		}
		return strings.Join(fs, " ")
	case "list":
		var out []string
		for _, e := range v.Elems {
			out = append(out, string(e.Str))
		}
		return fmt.Sprintf("%q", out)
	case "string":
		return strconv.Quote(string(v.Str))
	}
	return "(" + typ + ")"
}
