package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// startCluster starts a fresh 3-primary cluster for one test.
func startCluster(t *testing.T) *engines.ValkeyCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{})
	if errors.Is(err, engines.ErrUnavailable) {
		t.Skip(err) // e.g. EMQ_ENGINES=given with no EMQ_VALKEY_CLUSTER
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// calls records every routed call the router reports.
type calls struct {
	mu  sync.Mutex
	all []cluster.Call
}

func (c *calls) observe(call cluster.Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, call)
}

func (c *calls) snapshot() []cluster.Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cluster.Call(nil), c.all...)
}

func dialRouter(t *testing.T, addrs []string, rec *calls) *cluster.Router {
	t.Helper()
	opt := cluster.Options{}
	if rec != nil {
		opt.Observe = rec.observe
	}
	r, err := cluster.Dial(context.Background(), addrs, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// queueOn finds a queue name whose slot lies in [lo, hi].
func queueOn(prefix string, lo, hi int) string {
	for i := 0; ; i++ {
		q := fmt.Sprintf("%s%d", prefix, i)
		if s := int(keys.Slot("emq:{" + q + "}:pending")); s >= lo && s <= hi {
			return q
		}
	}
}

var seq atomic.Int64

// newID mints a JOB id (worker 7, a process-wide sequence: unique and in mint order).
func newID() string {
	n := seq.Add(1)
	return ids.Encode(ids.BrandJob, ids.Compose(uint64(time.Now().UnixMilli()), 7, int(n%4096)))
}

// keysOf builds a script's KEYS from its header patterns (the KEYS the reference bus passes):
// {q} -> the queue, <id> -> the job, <g> -> the lane; batch scripts repeat their per-item keys
// once per id.
func keysOf(s lua.Script, q, id, lane string, batch []string) []string {
	fill := func(p, id string) string {
		p = strings.ReplaceAll(p, "{q}", "{"+q+"}")
		p = strings.ReplaceAll(p, "<id>", id)
		return strings.ReplaceAll(p, "<g>", lane)
	}
	var out []string
	for _, p := range s.Keys {
		out = append(out, fill(p, id))
	}
	for _, bid := range batch {
		for _, p := range s.RepKeys {
			out = append(out, fill(p, bid))
		}
	}
	return out
}

// scripts gives every bundle script as a connector.Script with its header.
type scripts struct {
	b  *lua.Bundle
	cs map[string]*connector.Script
}

func newScripts(b *lua.Bundle) scripts {
	s := scripts{b: b, cs: map[string]*connector.Script{}}
	for _, ls := range b.Scripts() {
		s.cs[ls.Name] = connector.NewScript(ls.Name, ls.Source)
	}
	return s
}

// run calls script name on queue q through the router with its header's KEYS.
func (s scripts) run(ctx context.Context, r *cluster.Router, name, q, id, lane string, batch []string, args ...any) (resp.Value, error) {
	return r.EvalSha(ctx, s.cs[name], keysOf(s.b.MustScript(name), q, id, lane, batch), args...)
}

func keysSlot(q string) uint16 { return cluster.SlotOfQueue(q) }
