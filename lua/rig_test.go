package lua_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// rig drives the bundle against a live Valkey and, after every script, checks the wire law on
// the keyspace: every key parses under the grammar and belongs to the rig's queue (one slot) or
// is the bundle key.
type rig struct {
	t       *testing.T
	ctx     context.Context
	c       *connector.Conn
	b       *lua.Bundle
	q       keys.Q
	scripts map[string]*connector.Script
	pattern string // SCAN MATCH for the law check: all keys on our own server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	v := enginestest.Valkey(t)
	// No deadline: the random walk's thousands of calls take what a busy machine gives them, and
	// a hang is the go test -timeout's to report.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := connector.Dial(ctx, v.Addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToLower(strings.NewReplacer("/", ".", "_", "-").Replace(t.Name()))
	if len(name) > keys.MaxName {
		name = name[:keys.MaxName]
	}
	q, err := keys.Queue(name)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ctx: ctx, c: c, b: b, q: q, scripts: map[string]*connector.Script{}, pattern: "*"}
	if v.Mode == engines.ModeGiven { // a shared server: look only at what this test could write
		r.pattern = "*" + name + "*"
	}
	for _, s := range b.Scripts() {
		r.scripts[s.Name] = connector.NewScript(s.Name, s.Source)
	}
	return r
}

// id is a well-formed JOB id; larger n sorts later.
func id(n int) string { return ids.Encode(ids.BrandJob, ids.Compose(uint64(1000+n), 1, 0)) }

// keysFor fills a script's header key patterns for the rig's queue, id and lane; a batch
// script gets one item's repeated keys, for jobID.
func (r *rig) keysFor(name, jobID, lane string) []string {
	r.t.Helper()
	return r.batchKeys(name, lane, jobID)
}

// batchKeys fills a script's fixed key patterns, then its repeated ones once per id.
func (r *rig) batchKeys(name, lane string, ids ...string) []string {
	r.t.Helper()
	s, ok := r.b.Script(name)
	if !ok {
		r.t.Fatalf("no script %s", name)
	}
	fill := func(k, jobID string) string {
		return strings.NewReplacer("{q}", "{"+r.q.Name()+"}", "<id>", jobID, "<g>", lane).Replace(k)
	}
	var out []string
	for _, k := range s.Keys {
		out = append(out, fill(k, firstOr(ids)))
	}
	if !s.Batch() {
		return out
	}
	for _, jobID := range ids {
		for _, k := range s.RepKeys {
			out = append(out, fill(k, jobID))
		}
	}
	return out
}

func firstOr(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// run evaluates a script by SHA and then checks the keyspace laws.
func (r *rig) run(name string, ks []string, args ...any) (resp.Value, error) {
	r.t.Helper()
	v, err := r.c.EvalSha(r.ctx, r.scripts[name], ks, args...)
	var se *resp.ServerError
	if err != nil && !errors.As(err, &se) {
		r.t.Fatalf("%s: transport: %v", name, err)
	}
	r.laws(name)
	return v, err
}

// ok runs a script with its header keys and fails the test on an error reply.
func (r *rig) ok(name, jobID, lane string, args ...any) resp.Value {
	r.t.Helper()
	v, err := r.run(name, r.keysFor(name, jobID, lane), args...)
	if err != nil {
		r.t.Fatalf("%s(%s %s %v): %v", name, jobID, lane, args, err)
	}
	return v
}

// refused runs a script expecting an error of type want, and checks nothing changed.
func (r *rig) refused(want *emqerr.Error, name string, ks []string, args ...any) {
	r.t.Helper()
	before := r.snapshot()
	_, err := r.run(name, ks, args...)
	if !errors.Is(err, want) {
		r.t.Fatalf("%s keys=%v args=%v: got %v, want %s", name, ks, args, err, want.Type)
	}
	if after := r.snapshot(); !equalSnap(before, after) {
		r.t.Fatalf("%s refused (%v) but the keyspace changed:\nbefore %v\nafter  %v", name, err, before, after)
	}
}

func (r *rig) do(args ...any) resp.Value {
	r.t.Helper()
	v, err := r.c.Do(r.ctx, args...)
	if err != nil {
		r.t.Fatalf("%v: %v", args, err)
	}
	return v
}

func (r *rig) scan() []string {
	r.t.Helper()
	var out []string
	cursor := "0"
	for {
		v := r.do("SCAN", cursor, "MATCH", r.pattern, "COUNT", 1000)
		cursor = v.Elems[0].Text()
		for _, e := range v.Elems[1].Elems {
			out = append(out, e.Text())
		}
		if cursor == "0" {
			break
		}
	}
	sort.Strings(out)
	return out
}

// laws: every key parses, belongs to this queue (so answers its slot) or is the bundle; the
// wake list never exceeds one token.
func (r *rig) laws(after string) {
	r.t.Helper()
	slot := keys.Slot(r.q.Pending())
	for _, k := range r.scan() {
		p, err := keys.Parse(k)
		if err != nil {
			r.t.Fatalf("after %s: key %q outside the grammar: %v", after, k, err)
		}
		if p.Kind == keys.KindBundle {
			continue
		}
		if p.Queue != r.q.Name() || keys.Slot(k) != slot {
			r.t.Fatalf("after %s: key %q is not of queue %q (slot %d)", after, k, r.q.Name(), slot)
		}
	}
	if n := r.do("LLEN", r.q.Wake()).Int; n > 1 {
		r.t.Fatalf("after %s: wake holds %d tokens", after, n)
	}
}

// snapshot is every key's DUMP: equal snapshots mean an unchanged keyspace.
func (r *rig) snapshot() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	for _, k := range r.scan() {
		out[k] = r.do("DUMP", k).Text()
	}
	return out
}

func equalSnap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (r *rig) now() int64 {
	r.t.Helper()
	v := r.do("TIME")
	var s, us int64
	fmt.Sscan(v.Elems[0].Text(), &s)
	fmt.Sscan(v.Elems[1].Text(), &us)
	return s*1000 + us/1000
}

func (r *rig) hash(key string) map[string]string {
	r.t.Helper()
	v := r.do("HGETALL", key)
	out := map[string]string{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		out[v.Elems[i].Text()] = v.Elems[i+1].Text()
	}
	return out
}

func (r *rig) members(key string) []string {
	r.t.Helper()
	typ := r.do("TYPE", key).Text()
	var v resp.Value
	switch typ {
	case "zset":
		v = r.do("ZRANGE", key, 0, -1)
	case "list":
		v = r.do("LRANGE", key, 0, -1)
	case "none":
		return nil
	default:
		r.t.Fatalf("%s is a %s", key, typ)
	}
	out := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		out[i] = e.Text()
	}
	return out
}

func (r *rig) score(key, member string) (int64, bool) {
	r.t.Helper()
	v := r.do("ZSCORE", key, member)
	if v.Null {
		return 0, false
	}
	n, err := v.Int64()
	if err != nil {
		r.t.Fatalf("ZSCORE %s %s = %q", key, member, v.Text())
	}
	return n, true
}

func (r *rig) exists(key string) bool { r.t.Helper(); return r.do("EXISTS", key).Int == 1 }

func (r *rig) row(jobID string) string {
	r.t.Helper()
	k, err := r.q.Job(jobID)
	if err != nil {
		r.t.Fatal(err)
	}
	return k
}

func (r *rig) lane(g string) string {
	r.t.Helper()
	k, err := r.q.Lane(g)
	if err != nil {
		r.t.Fatal(err)
	}
	return k
}

// claimed is a decoded claim / lane_claim reply.
type claimed struct {
	id, payload, lane string
	token             int64
	ckpt              *string
}

func (r *rig) claim(name string, leaseMs int) (claimed, bool) {
	r.t.Helper()
	v := r.ok(name, "", "", leaseMs)
	if v.Type != resp.Array {
		r.t.Fatalf("%s reply %v: want an array", name, v)
	}
	if len(v.Elems) == 0 {
		return claimed{}, false
	}
	want := 4
	if name == lua.LaneClaim {
		want = 5
	}
	if len(v.Elems) != want {
		r.t.Fatalf("%s reply has %d elements, want %d", name, len(v.Elems), want)
	}
	c := claimed{id: v.Elems[0].Text(), payload: v.Elems[1].Text(), token: v.Elems[2].Int}
	if v.Elems[2].Type != resp.Integer {
		r.t.Fatalf("%s: attempts is a %s", name, v.Elems[2].Type)
	}
	if !v.Elems[3].Null {
		s := v.Elems[3].Text()
		c.ckpt = &s
	}
	if want == 5 {
		c.lane = v.Elems[4].Text()
	}
	return c, true
}

func (r *rig) mustClaim(name string, leaseMs int) claimed {
	r.t.Helper()
	c, ok := r.claim(name, leaseMs)
	if !ok {
		r.t.Fatalf("%s: empty, want a job", name)
	}
	return c
}

func (r *rig) state(jobID string) string { r.t.Helper(); return r.hash(r.row(jobID))["state"] }

func (r *rig) enqueue(jobID, payload string, delayMs int) resp.Value {
	r.t.Helper()
	return r.ok(lua.Enqueue, jobID, "", jobID, payload, delayMs)
}

func (r *rig) laneEnqueue(jobID, g, payload string, delayMs int) resp.Value {
	r.t.Helper()
	return r.ok(lua.LaneEnqueue, jobID, g, jobID, g, payload, delayMs)
}
