package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// A slot in migration meets a script half-way. Valkey checks a script's declared KEYS against the
// migrating slot, then every command inside it: on the source a command on a key that is not there
// aborts the script ("non local key"), on the target a multi-key command with an absent key does
// ("undeclared keys … during rehashing"), and what the script wrote before the abort stays. The
// bundle derives job rows and lane keys from the queue prefix, and some scripts read a key after a
// write emptied it; before the bundle read first, reap here ZREMmed the id from active and aborted
// at the moved row, orphaning the job.
//
// Each script that derives a key or reads after a write is called directly on a node while its
// queue's slot is half moved, both ways: the derived key already on the target and the script on
// the source, and the derived key still on the source and the script (ASKING) on the target. It
// aborts with every key of the slot on both nodes byte for byte as before (or, with every key
// it needs on the node, runs and is right); the same call through the router, started during the
// migration, waits it out and succeeds once the slot has moved; and the queue is consistent
// afterwards: every row in the index of its state, every index entry a row in that state.
func TestMigrationAbortsBeforeWrites(t *testing.T) {
	vc := startCluster(t)
	if vc.Mode == engines.ModeGiven {
		t.Skip("moves slots between primaries: only on a cluster of our own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shards, err := engines.ClusterShards(ctx, vc.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	h := &hazard{t: t, ctx: ctx, shards: shards, src: shards[0], dst: shards[1],
		r: dialRouter(t, vc.Addrs, nil), used: map[uint16]bool{}}
	h.sc = newScripts(h.r.Bundle())
	h.srcC, h.dstC = h.dial(h.src.Primary), h.dial(h.dst.Primary)
	for _, s := range h.r.Bundle().Scripts() { // so a direct EVALSHA never meets NOSCRIPT
		for _, c := range []*connector.Conn{h.srcC, h.dstC} {
			if _, err := c.Do(ctx, "SCRIPT", "LOAD", s.Source); err != nil {
				t.Fatal(err)
			}
		}
	}

	type call struct {
		script, id, lane string
		batch            []string
		args             []any
	}
	cases := []struct {
		name  string
		world func(q string) world
		call  func(w world) call
		split func(w world) []string // key suffixes on the other side of the call
		runs  func(w world, v resp.Value, node *connector.Conn, asking bool) error
		want  func(w world) string // the router's reply once the slot has moved
	}{
		{name: "claim: the oldest row", world: h.rich,
			call:  func(w world) call { return call{script: lua.Claim, args: []any{30000}} },
			split: func(w world) []string { return []string{"job:" + w["p"]} },
			want:  func(w world) string { return w["p"] }},
		{name: "claim_batch: the oldest rows", world: h.rich,
			call:  func(w world) call { return call{script: lua.ClaimBatch, args: []any{30000, 5}} },
			split: func(w world) []string { return []string{"job:" + w["p"]} },
			want:  func(w world) string { return w["p"] }},
		{name: "lane_claim: the head lane's oldest row", world: h.rich,
			call:  func(w world) call { return call{script: lua.LaneClaim, args: []any{30000}} },
			split: func(w world) []string { return []string{"job:" + w["l2"]} },
			want:  func(w world) string { return w["l2"] }},
		{name: "promote: a due row", world: h.rich,
			call:  func(w world) call { return call{script: lua.Promote, args: []any{100}} },
			split: func(w world) []string { return []string{"job:" + w["s"]} },
			want:  func(world) string { return "1" }},
		{name: "reap: an expired row", world: h.rich,
			call:  func(w world) call { return call{script: lua.Reap, args: []any{5, 100}} },
			split: func(w world) []string { return []string{"job:" + w["x"]} },
			want:  func(world) string { return "1" }},
		{name: "promote: a due row's lane key", world: h.lanesDue,
			call:  func(w world) call { return call{script: lua.Promote, args: []any{100}} },
			split: func(w world) []string { return []string{"lane:g6"} },
			want:  func(world) string { return "1" }},
		{name: "reap: an expired row's lane key", world: h.lanesDue,
			call:  func(w world) call { return call{script: lua.Reap, args: []any{5, 100}} },
			split: func(w world) []string { return []string{"lane:g7"} },
			want:  func(world) string { return "1" }},
		{name: "complete: the lane key", world: h.rich,
			call:  func(w world) call { return call{script: lua.Complete, id: w["l1"], args: []any{w["l1"], 1}} },
			split: func(w world) []string { return []string{"lane:g1"} },
			want:  func(world) string { return "1" }},
		{name: "complete_batch: the lane key", world: h.rich,
			call: func(w world) call {
				return call{script: lua.CompleteBatch, batch: []string{w["l1"]}, args: []any{w["l1"], 1}}
			},
			split: func(w world) []string { return []string{"lane:g1"} },
			want:  func(world) string { return "1" }},
		{name: "fail: the lane key", world: h.rich,
			call:  func(w world) call { return call{script: lua.Fail, id: w["l1"], args: []any{w["l1"], 1, "boom"}} },
			split: func(w world) []string { return []string{"lane:g1"} },
			want:  func(world) string { return "1" }},
		{name: "retry: the lane key", world: h.rich,
			call: func(w world) call {
				return call{script: lua.Retry, id: w["l1"], args: []any{w["l1"], 1, 5, 0, "boom"}}
			},
			split: func(w world) []string { return []string{"lane:g1"} },
			want:  func(world) string { return "retried" }},
		{name: "revive: a lane key it creates", world: h.rich, // lane:g2 exists on neither node
			call:  func(w world) call { return call{script: lua.Revive, id: w["d"], args: []any{w["d"]}} },
			split: func(world) []string { return nil },
			want:  func(world) string { return "1" }},
		{name: "lane_ceiling: every key here, runs", world: h.rich,
			call:  func(w world) call { return call{script: lua.LaneCeiling, lane: "g1", args: []any{"g1", 1}} },
			split: func(world) []string { return nil },
			runs: func(w world, v resp.Value, node *connector.Conn, asking bool) error {
				return expect(h.ctx, node, asking, "1", "HGET", w.key("lanes"), "ceiling:g1")
			},
			want: func(world) string { return "1" }},
		// lanes holds only ceiling:g5: removing it empties lanes, and the ring fix must not read it after.
		{name: "lane_ceiling: empties lanes, runs", world: h.ceilingOnly,
			call:  func(w world) call { return call{script: lua.LaneCeiling, lane: "g5", args: []any{"g5", 0}} },
			split: func(world) []string { return nil },
			runs: func(w world, v resp.Value, node *connector.Conn, asking bool) error {
				return expect(h.ctx, node, asking, "0", "LPOS", w.key("ring"), "g5")
			},
			want: func(world) string { return "1" }},
		// lanes holds only paused:g3: resuming empties it, and the ring fix must not read it after.
		{name: "lane_resume: empties lanes, runs", world: h.pausedLane,
			call:  func(w world) call { return call{script: lua.LaneResume, lane: "g3", args: []any{"g3"}} },
			split: func(world) []string { return nil },
			runs: func(w world, v resp.Value, node *connector.Conn, asking bool) error {
				return expect(h.ctx, node, asking, "1", "LPOS", w.key("ring"), "g3")
			},
			want: func(world) string { return "1" }},
	}
	for _, c := range cases {
		for _, onTarget := range []bool{false, true} {
			side := "derived key on the target, script on the source"
			if onTarget {
				side = "derived key on the source, script on the target"
			}
			t.Run(c.name+"/"+side, func(t *testing.T) {
				h.t = t
				q := h.queue()
				w := c.world(q)
				cl := c.call(w)
				ks := keysOf(h.r.Bundle().MustScript(cl.script), q, cl.id, cl.lane, cl.batch)
				for _, k := range ks {
					if h.get(h.srcC, false, "EXISTS", k) != "1" {
						t.Fatalf("precondition: declared key %s absent (the call would be refused before it ran)", k)
					}
				}
				var split []string
				for _, s := range c.split(w) {
					split = append(split, w.key(s))
				}
				slot := cluster.SlotOfQueue(q)
				h.get(h.dstC, false, "CLUSTER", "SETSLOT", int(slot), "IMPORTING", h.src.ID)
				h.get(h.srcC, false, "CLUSTER", "SETSLOT", int(slot), "MIGRATING", h.dst.ID)
				node, asking := h.srcC, false
				move := split
				if onTarget {
					node, asking = h.dstC, true
					move = nil
					for _, k := range h.slotKeys(h.srcC, slot) {
						if !slices.Contains(split, k) {
							move = append(move, k)
						}
					}
				}
				h.migrate(move)
				before := h.snapshot(slot)
				sha := h.r.Bundle().MustScript(cl.script).SHA1
				cmd := append(append([]any{"EVALSHA", sha, len(ks)}, toArgs(ks)...), cl.args...)
				v, err := h.do(node, asking, cmd...)
				switch {
				case c.runs != nil:
					if err != nil {
						t.Fatalf("%s with every key on the node: %v", cl.script, err)
					}
					if err := c.runs(w, v, node, asking); err != nil {
						t.Fatal(err)
					}
				case err == nil || !migrationAbort(err):
					t.Fatalf("%s: %v (%q), want the engine's migration abort", cl.script, err, v.Text())
				default:
					if after := h.snapshot(slot); !maps.Equal(before, after) {
						t.Fatalf("%s aborted (%v) but wrote: %s", cl.script, err, diff(before, after))
					}
					t.Logf("%s aborted with nothing written: %v", cl.script, err)
				}
				// Through the router the call waits the migration out, then runs once.
				waits := h.r.Stats().TryAgain
				got := make(chan error, 1)
				go func() {
					v, err := h.sc.run(h.ctx, h.r, cl.script, q, cl.id, cl.lane, cl.batch, cl.args...)
					if err == nil && summary(v) != c.want(w) {
						err = fmt.Errorf("reply %s, want %s", summary(v), c.want(w))
					}
					got <- err
				}()
				if c.runs == nil {
					h.waitFor(func() bool { return h.r.Stats().TryAgain > waits }, "the router to meet the abort")
				}
				if _, err := engines.MoveSlot(h.ctx, h.shards, h.src, h.dst, int(slot), 100, nil); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatalf("%s through the router: %v", cl.script, err)
				}
				h.consistent(q, slot)
			})
		}
	}
}

// world names a queue's jobs; key builds a key of that queue.
type world map[string]string

func (w world) key(suffix string) string { return "emq:{" + w["q"] + "}:" + suffix }

type hazard struct {
	t          *testing.T
	ctx        context.Context
	shards     []engines.Shard
	src, dst   engines.Shard
	r          *cluster.Router
	sc         scripts
	srcC, dstC *connector.Conn
	used       map[uint16]bool
	n          int
}

func (h *hazard) dial(addr string) *connector.Conn {
	c, err := connector.Dial(h.ctx, addr, connector.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// queue is a fresh queue on the source whose slot no earlier case moved.
func (h *hazard) queue() string {
	for {
		h.n++
		q := queueOn(fmt.Sprintf("mig%d-", h.n), h.src.Slots[0][0], h.src.Slots[0][1])
		if s := cluster.SlotOfQueue(q); !h.used[s] {
			h.used[s] = true
			return q
		}
	}
}

func (h *hazard) run(q, name, id, lane string, args ...any) resp.Value {
	h.t.Helper()
	v, err := h.sc.run(h.ctx, h.r, name, q, id, lane, nil, args...)
	if err != nil {
		h.t.Fatalf("set-up %s: %v", name, err)
	}
	return v
}

// rich gives queue q every kind of key: a dead lane job d (lane g2, now empty), an active lane
// job l1 and a pending one l2 in lane g1 (ceiling 5, in the ring), an active job a with a
// checkpoint, an expired lease x, a pending p, a due scheduled s and a later one, a wake token
// and a meta hash (paused 0: not paused, but present).
func (h *hazard) rich(q string) world {
	w := world{"q": q}
	for _, n := range []string{"d", "l1", "l2", "a", "x", "p", "s", "s2"} {
		w[n] = newID()
	}
	h.run(q, lua.LaneEnqueue, w["d"], "g2", w["d"], "g2", "pd", 0)
	h.run(q, lua.LaneClaim, "", "", 30000)
	h.run(q, lua.Fail, w["d"], "", w["d"], 1, "boom")
	h.run(q, lua.LaneEnqueue, w["l1"], "g1", w["l1"], "g1", "p1", 0)
	h.run(q, lua.LaneEnqueue, w["l2"], "g1", w["l2"], "g1", "p2", 0)
	h.run(q, lua.LaneCeiling, "", "g1", "g1", 5)
	h.run(q, lua.LaneClaim, "", "", 30000)
	h.run(q, lua.Enqueue, w["a"], "", w["a"], "pa", 0)
	h.run(q, lua.Claim, "", "", 30000)
	h.run(q, lua.Checkpoint, w["a"], "", w["a"], 1, "ck")
	h.run(q, lua.Enqueue, w["x"], "", w["x"], "px", 0)
	h.run(q, lua.Claim, "", "", 1)
	h.run(q, lua.Enqueue, w["p"], "", w["p"], "pp", 0)
	h.run(q, lua.Enqueue, w["s"], "", w["s"], "ps", 1)
	h.run(q, lua.Enqueue, w["s2"], "", w["s2"], "ps2", 3600000)
	if _, err := h.r.Do(h.ctx, w.key("meta"), "HSET", w.key("meta"), "paused", "0"); err != nil {
		h.t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // x's lease passes, s falls due
	for _, k := range []string{"pending", "active", "scheduled", "dead", "errors", "ckpt", "meta", "wake",
		"ring", "lanes", "laneof", "lane:g1"} {
		if h.get(h.srcC, false, "EXISTS", w.key(k)) != "1" {
			h.t.Fatalf("set-up: %s absent", k)
		}
	}
	return w
}

// lanesDue gives queue q lane jobs for promote and reap: a due scheduled job s in lane g6
// (whose key holds a pending p6), an expired lease x in lane g7 (whose key holds a pending y), a
// dead job d (so dead and errors exist) and a plain pending p.
func (h *hazard) lanesDue(q string) world {
	w := world{"q": q}
	for _, n := range []string{"d", "x", "y", "p6", "s", "p"} {
		w[n] = newID()
	}
	h.run(q, lua.LaneEnqueue, w["d"], "g2", w["d"], "g2", "pd", 0)
	h.run(q, lua.LaneClaim, "", "", 30000)
	h.run(q, lua.Fail, w["d"], "", w["d"], 1, "boom")
	h.run(q, lua.LaneEnqueue, w["x"], "g7", w["x"], "g7", "px", 0)
	h.run(q, lua.LaneClaim, "", "", 1)
	h.run(q, lua.LaneEnqueue, w["y"], "g7", w["y"], "g7", "py", 0)
	h.run(q, lua.LaneEnqueue, w["p6"], "g6", w["p6"], "g6", "pp6", 0)
	h.run(q, lua.LaneEnqueue, w["s"], "g6", w["s"], "g6", "ps", 1)
	h.run(q, lua.Enqueue, w["p"], "", w["p"], "pp", 0)
	time.Sleep(5 * time.Millisecond) // x's lease passes, s falls due
	for _, k := range []string{"lane:g6", "lane:g7", "scheduled", "active"} {
		if h.get(h.srcC, false, "EXISTS", w.key(k)) != "1" {
			h.t.Fatalf("set-up: %s absent", k)
		}
	}
	return w
}

// pausedLane gives queue q lane g3 paused with a pending job and lane g4 in the ring: lanes holds
// only paused:g3.
func (h *hazard) pausedLane(q string) world {
	w := world{"q": q, "e1": newID(), "e2": newID()}
	h.run(q, lua.LaneEnqueue, w["e1"], "g3", w["e1"], "g3", "p1", 0)
	h.run(q, lua.LaneEnqueue, w["e2"], "g4", w["e2"], "g4", "p2", 0)
	h.run(q, lua.LanePause, "", "g3", "g3")
	if v := h.get(h.srcC, false, "HGETALL", w.key("lanes")); v != "paused:g3=1" {
		h.t.Fatalf("set-up: lanes %s", v)
	}
	return w
}

// ceilingOnly gives queue q lane g5 with a pending job and a ceiling of 1, in the ring: lanes
// holds only ceiling:g5.
func (h *hazard) ceilingOnly(q string) world {
	w := world{"q": q, "e1": newID()}
	h.run(q, lua.LaneEnqueue, w["e1"], "g5", w["e1"], "g5", "p1", 0)
	h.run(q, lua.LaneCeiling, "", "g5", "g5", 1)
	if v := h.get(h.srcC, false, "HGETALL", w.key("lanes")); v != "ceiling:g5=1" {
		h.t.Fatalf("set-up: lanes %s", v)
	}
	return w
}

func (h *hazard) do(c *connector.Conn, asking bool, args ...any) (resp.Value, error) {
	if !asking {
		return c.Do(h.ctx, args...)
	}
	vs, err := c.Pipeline(h.ctx, connector.Cmd{Args: []any{"ASKING"}}, connector.Cmd{Args: args})
	if err != nil {
		return resp.Value{}, err
	}
	return vs[1], vs[1].Err()
}

// get runs a command that must not fail and renders its reply (an array as k=v pairs joined by ",").
func (h *hazard) get(c *connector.Conn, asking bool, args ...any) string {
	h.t.Helper()
	v, err := h.do(c, asking, args...)
	if err != nil {
		h.t.Fatalf("%v: %v", args, err)
	}
	if len(v.Elems) == 0 {
		return v.Text()
	}
	var parts []string
	for i := 0; i+1 < len(v.Elems); i += 2 {
		parts = append(parts, v.Elems[i].Text()+"="+v.Elems[i+1].Text())
	}
	return strings.Join(parts, ",")
}

func (h *hazard) slotKeys(c *connector.Conn, slot uint16) []string {
	h.t.Helper()
	v, err := c.Do(h.ctx, "CLUSTER", "GETKEYSINSLOT", int(slot), 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range v.Elems {
		out = append(out, e.Text())
	}
	return out
}

// snapshot is every key of the slot on both nodes, node and key to its DUMP.
func (h *hazard) snapshot(slot uint16) map[string]string {
	h.t.Helper()
	out := map[string]string{}
	for _, n := range []struct {
		c      *connector.Conn
		asking bool
		name   string
	}{{h.srcC, false, "src"}, {h.dstC, true, "dst"}} {
		for _, k := range h.slotKeys(n.c, slot) {
			out[n.name+" "+k] = h.get(n.c, n.asking, "DUMP", k)
		}
	}
	return out
}

func (h *hazard) migrate(ks []string) {
	h.t.Helper()
	if len(ks) == 0 {
		return
	}
	host, port, _ := net.SplitHostPort(h.dst.Primary)
	h.get(h.srcC, false, append([]any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}, toArgs(ks)...)...)
}

func (h *hazard) waitFor(ok func() bool, what string) {
	h.t.Helper()
	await.Until(h.t, what, ok)
}

// consistent checks queue q on the slot's new owner: every job row sits in the index of its state
// (pending: pending or its lane), every index entry has a row in that state.
func (h *hazard) consistent(q string, slot uint16) {
	h.t.Helper()
	state, index := map[string]string{}, map[string][]string{} // id -> row state; id -> where indexed
	for _, k := range h.slotKeys(h.dstC, slot) {
		p, err := keys.Parse(k)
		if err != nil {
			h.t.Fatalf("key %s: %v", k, err)
		}
		switch p.Kind {
		case keys.KindJob:
			state[p.ID] = h.get(h.dstC, false, "HGET", k, "state")
		case keys.KindPending, keys.KindActive, keys.KindScheduled, keys.KindDead, keys.KindLane:
			v, err := h.dstC.Do(h.ctx, "ZRANGE", k, 0, -1)
			if err != nil {
				h.t.Fatal(err)
			}
			where := string(p.Kind)
			if p.Kind == keys.KindLane {
				where = "pending"
			}
			for _, e := range v.Elems {
				index[e.Text()] = append(index[e.Text()], where)
			}
		}
	}
	for id, s := range state {
		if got := index[id]; len(got) != 1 || got[0] != s {
			h.t.Errorf("queue %s: job %s is %s but indexed in %v", q, id, s, got)
		}
	}
	for id, where := range index {
		if _, ok := state[id]; !ok {
			h.t.Errorf("queue %s: %s indexed in %v has no row", q, id, where)
		}
	}
}

func expect(ctx context.Context, c *connector.Conn, asking bool, want string, args ...any) error {
	cmd := []connector.Cmd{{Args: args}}
	if asking {
		cmd = append([]connector.Cmd{{Args: []any{"ASKING"}}}, cmd...)
	}
	vs, err := c.Pipeline(ctx, cmd...)
	if err != nil {
		return err
	}
	if got := vs[len(vs)-1]; got.Text() != want {
		return fmt.Errorf("%v: %q, want %q", args, got.Text(), want)
	}
	return nil
}

// migrationAbort: the engine's abort of a script at a key not on the node.
func migrationAbort(err error) bool {
	return strings.Contains(err.Error(), "non local key") || strings.Contains(err.Error(), "during rehashing of the slot")
}

// summary is a reply's first scalar: the id of a claim (or of a batch's first claim), else the text.
func summary(v resp.Value) string {
	for len(v.Elems) > 0 {
		v = v.Elems[0]
	}
	return v.Text()
}

func diff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "gone "+k)
		} else if w != v {
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "new "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func toArgs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
