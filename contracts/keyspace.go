package contracts

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func unb64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "<not base64: " + s + ">"
	}
	return string(b)
}

// q returns the builder of a queue's keys; the names the contracts use are all valid.
func (t *T) q(name string) keys.Q {
	q, err := keys.Queue(name)
	if err != nil {
		t.harness("queue %q: %v", name, err)
	}
	return q
}

func jobKey(q keys.Q, id string) string { return q.Prefix() + "job:" + id }

func laneKey(q keys.Q, g string) string { return q.Prefix() + "lane:" + g }

// do runs a harness command on its own connection.
func (t *T) do(args ...any) ([]string, int64, bool) {
	v, err := t.admin.do(t.ctx, args...)
	if err != nil {
		t.harness("%v: %v", args, err)
	}
	if v.Null {
		return nil, 0, false
	}
	var out []string
	for _, e := range v.Elems {
		out = append(out, string(e.Str))
	}
	if len(v.Elems) == 0 {
		out = []string{v.Text()}
	}
	return out, v.Int, true
}

// hash is HGETALL as a map.
func (t *T) hash(key string) map[string]string {
	v, err := t.admin.do(t.ctx, "HGETALL", key)
	if err != nil {
		t.harness("HGETALL %s: %v", key, err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[string(v.Elems[i].Str)] = string(v.Elems[i+1].Str)
	}
	return m
}

// hget is one hash field; ok false when absent.
func (t *T) hget(key, field string) (string, bool) {
	v, err := t.admin.do(t.ctx, "HGET", key, field)
	if err != nil {
		t.harness("HGET %s %s: %v", key, field, err)
	}
	return string(v.Str), !v.Null
}

// zset is ZRANGE 0 -1 WITHSCORES as ordered members and their scores.
func (t *T) zset(key string) ([]string, map[string]int64) {
	v, err := t.admin.do(t.ctx, "ZRANGE", key, "0", "-1", "WITHSCORES")
	if err != nil {
		t.harness("ZRANGE %s: %v", key, err)
	}
	var members []string
	scores := map[string]int64{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m := string(v.Elems[i].Str)
		f, _ := strconv.ParseFloat(string(v.Elems[i+1].Str), 64)
		members = append(members, m)
		scores[m] = int64(f)
	}
	return members, scores
}

// zscore is a member's score; ok false when absent.
func (t *T) zscore(key, member string) (int64, bool) {
	_, scores := t.zset(key)
	s, ok := scores[member]
	return s, ok
}

func (t *T) list(key string) []string {
	v, err := t.admin.do(t.ctx, "LRANGE", key, "0", "-1")
	if err != nil {
		t.harness("LRANGE %s: %v", key, err)
	}
	var out []string
	for _, e := range v.Elems {
		out = append(out, string(e.Str))
	}
	return out
}

func (t *T) llen(key string) int64 {
	v, err := t.admin.do(t.ctx, "LLEN", key)
	if err != nil {
		t.harness("LLEN %s: %v", key, err)
	}
	return v.Int
}

func (t *T) exists(key string) bool {
	v, err := t.admin.do(t.ctx, "EXISTS", key)
	if err != nil {
		t.harness("EXISTS %s: %v", key, err)
	}
	return v.Int == 1
}

// now is the server's clock in ms.
func (t *T) now() int64 {
	ms, err := t.admin.serverMS(t.ctx)
	if err != nil {
		t.harness("TIME: %v", err)
	}
	return ms
}

// waitPast waits until the server's TIME is at or past deadline (A2: a lease whose deadline is
// ≤ TIME has passed), checking with TIME rather than trusting a local sleep.
func (t *T) waitPast(deadline int64) {
	for {
		now := t.now()
		if now >= deadline {
			return
		}
		select {
		case <-t.ctx.Done():
			t.harness("waiting for server time %d: %v", deadline, t.ctx.Err())
		case <-time.After(time.Duration(deadline-now)*time.Millisecond + time.Millisecond):
		}
	}
}

// allKeys lists the keyspace (of every primary, on a cluster), sorted.
func (t *T) allKeys() []string {
	out, err := t.admin.scan(t.ctx, "")
	if err != nil {
		t.harness("%v", err)
	}
	return out
}

// snapshot renders the whole keyspace canonically (wire.Admin.Snapshot).
func (t *T) snapshot() map[string]string {
	s, err := t.admin.Snapshot(t.ctx)
	if err != nil {
		t.harness("%v", err)
	}
	return s
}

// readKeys reads every key of ks: each one's type and its whole content (wire.Admin.ReadKeys).
func (t *T) readKeys(ks []string) ([]string, []resp.Value) {
	types, vals, err := t.admin.ReadKeys(t.ctx, ks)
	if err != nil {
		t.harness("%v", err)
	}
	return types, vals
}

// diff describes how two snapshots differ ("" when equal).
func diff(before, after map[string]string) string {
	var ds []string
	for k, v := range before {
		w, ok := after[k]
		switch {
		case !ok:
			ds = append(ds, fmt.Sprintf("%s removed (was %s)", k, v))
		case v != w:
			ds = append(ds, fmt.Sprintf("%s changed: %s → %s", k, v, w))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			ds = append(ds, fmt.Sprintf("%s added: %s", k, v))
		}
	}
	sort.Strings(ds)
	return strings.Join(ds, "; ")
}

// kitEnqueue enqueues jobs from the harness's own connection with the bundle's enqueue script,
// in one MULTI/EXEC so that the burst lands at once. ids are JOB ids the kit made up.
func (t *T) kitEnqueue(qname string, ids []string) {
	q := t.q(qname)
	s := t.cfg.Bundle.MustScript(lua.Enqueue)
	if _, err := t.admin.do(t.ctx, "SCRIPT", "LOAD", s.Source); err != nil {
		t.harness("SCRIPT LOAD enqueue: %v", err)
	}
	cmds := [][]any{{"MULTI"}}
	for _, id := range ids {
		cmds = append(cmds, []any{"EVALSHA", s.SHA1, "4", jobKey(q, id), q.Pending(), q.Scheduled(), q.Wake(), id, "kit", "0"})
	}
	cmds = append(cmds, []any{"EXEC"})
	vs, err := t.admin.pipeline(t.ctx, cmds...)
	if err != nil {
		t.harness("kit enqueue: %v", err)
	}
	exec := vs[len(vs)-1]
	for _, r := range exec.Elems {
		if e := r.Err(); e != nil {
			t.harness("kit enqueue: %v", e)
		}
	}
}

// kitIDs makes n distinct, well-formed JOB ids in ascending order, far from any real minter's.
func kitIDs(n int, base uint64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = jobID(base + uint64(i))
	}
	return out
}

// jobID encodes a snowflake under the JOB brand (canon §3).
func jobID(sf uint64) string { return ids.Encode(ids.BrandJob, sf) }
