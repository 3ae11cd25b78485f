package bus_test

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// serviceable computes, from the keyspace alone, the lanes the ring must hold: lanes with
// pending ids, not paused, below their ceiling.
func (in *inspector) serviceable(q string) []string {
	in.t.Helper()
	lanes := in.hash("emq:{" + q + "}:lanes")
	var out []string
	for _, k := range in.scan("emq:{" + q + "}:lane:*") {
		g := strings.TrimPrefix(k, "emq:{"+q+"}:lane:")
		if in.int("ZCARD", k) == 0 || lanes["paused:"+g] != "" {
			continue
		}
		active, _ := strconv.Atoi(lanes["active:"+g])
		if c, ok := lanes["ceiling:"+g]; ok {
			if n, _ := strconv.Atoi(c); active >= n {
				continue
			}
		}
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

func (in *inspector) ring(q string) []string {
	in.t.Helper()
	return in.strs("LRANGE", "emq:{"+q+"}:ring", 0, -1)
}

func (in *inspector) ringInvariant(q, step string) {
	in.t.Helper()
	ring := in.ring(q)
	sorted := slices.Clone(ring)
	sort.Strings(sorted)
	if !slices.Equal(slices.Compact(slices.Clone(sorted)), sorted) {
		in.t.Fatalf("after %s: the ring holds a lane twice: %v", step, ring)
	}
	if want := in.serviceable(q); !slices.Equal(sorted, want) {
		in.t.Fatalf("after %s: ring %v, serviceable %v", step, ring, want)
	}
}

func TestLaneRotation(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	// a has 3 jobs, b 1, c 2: claims rotate a b c a c a.
	for _, g := range []string{"a", "a", "a", "b", "c", "c"} {
		if _, err := b.Enqueue(ctx, q, []byte(g), bus.WithLane(g)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var jobs []*bus.Job
	for {
		j, err := b.LaneClaim(ctx, q, bus.Ms(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if j == nil {
			break
		}
		if string(j.Payload) != j.Lane {
			t.Fatalf("job of lane %s claimed from %s", j.Payload, j.Lane)
		}
		got = append(got, j.Lane)
		jobs = append(jobs, j)
		in.ringInvariant(q, "lane claim")
	}
	if want := []string{"a", "b", "c", "a", "c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("rotation %v, want %v", got, want)
	}
	for _, j := range jobs {
		if err := j.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if r := in.residue(q); len(r) != 0 {
		t.Fatalf("lane bookkeeping left: %v", r)
	}
}

func TestLanePauseAndCeiling(t *testing.T) {
	ctx, b, in, q := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr), qname(t)
	leaveNoForeignKeys(t, in)
	for _, g := range []string{"a", "a", "b", "b"} {
		b.Enqueue(ctx, q, nil, bus.WithLane(g))
	}
	if err := b.LanePause(ctx, q, "a"); err != nil {
		t.Fatal(err)
	}
	in.ringInvariant(q, "pause a")
	if r := in.ring(q); !slices.Equal(r, []string{"b"}) {
		t.Fatalf("ring %v", r)
	}
	if in.int("ZCARD", "emq:{"+q+"}:lane:a") != 2 {
		t.Fatal("a paused lane lost its backlog")
	}
	if err := b.LaneCeiling(ctx, q, "b", 1); err != nil {
		t.Fatal(err)
	}
	j1, _ := b.LaneClaim(ctx, q, bus.Ms(30*time.Second)) // a lease the ring checks below cannot outlast
	if j1 == nil || j1.Lane != "b" {
		t.Fatalf("claim %v", j1)
	}
	in.ringInvariant(q, "claim b at ceiling")
	if j, _ := b.LaneClaim(ctx, q, bus.Ms(time.Second)); j != nil {
		t.Fatalf("claimed %s past b's ceiling with a paused", j.Lane)
	}
	in.do("DEL", "emq:{"+q+"}:wake")
	if err := j1.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	in.ringInvariant(q, "complete below ceiling")
	if in.int("LLEN", "emq:{"+q+"}:wake") != 1 {
		t.Fatal("a lane reopening on complete did not arm the wake")
	}
	if err := b.LaneResume(ctx, q, "a"); err != nil {
		t.Fatal(err)
	}
	in.ringInvariant(q, "resume a")
	if err := b.LaneCeiling(ctx, q, "b", 0); err != nil {
		t.Fatal(err)
	}
	var n int
	for {
		j, _ := b.LaneClaim(ctx, q, bus.Ms(time.Second))
		if j == nil {
			break
		}
		n++
		j.Complete(ctx)
		in.ringInvariant(q, "drain")
	}
	if n != 3 {
		t.Fatalf("drained %d, want 3", n)
	}
	b.LaneCeiling(ctx, q, "b", 0)
	if r := in.residue(q); len(r) != 0 {
		t.Fatalf("left: %v", r)
	}
}

// Property: after every step of a random sequence of lane operations the ring equals the set
// of serviceable lanes computed from the keyspace, each lane at most once, and a lane with
// work waits at most N-1 lane claims.
func TestRingInvariantProperty(t *testing.T) {
	ctx, b, in := ctxT(t), openBus(t, addr, bus.Options{}), inspect(t, addr)
	leaveNoForeignKeys(t, in)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	lanes := []string{"l0", "l1", "l2", "l3"}
	for round := 0; round < 3; round++ {
		q := qname(t)
		var held []*bus.Job
		for step := 0; step < 120; step++ {
			g := lanes[r.IntN(len(lanes))]
			var op string
			switch k := r.IntN(10); {
			case k < 3:
				op = "enqueue " + g
				if _, err := b.Enqueue(ctx, q, nil, bus.WithLane(g)); err != nil {
					t.Fatal(err)
				}
			case k < 5:
				op = "lane claim"
				j, err := b.LaneClaim(ctx, q, bus.Ms(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				if j != nil {
					held = append(held, j)
				}
			case k < 7 && len(held) > 0:
				i := r.IntN(len(held))
				j := held[i]
				held = append(held[:i], held[i+1:]...)
				switch r.IntN(3) {
				case 0:
					op = "complete"
					err := j.Complete(ctx)
					if err != nil {
						t.Fatal(err)
					}
				case 1:
					op = "retry"
					if _, err := j.Retry(ctx, 100, 0, "again"); err != nil {
						t.Fatal(err)
					}
				default:
					op = "fail+revive"
					if err := j.Fail(ctx, "x"); err != nil {
						t.Fatal(err)
					}
					in.ringInvariant(q, "fail")
					if ok, err := b.Revive(ctx, q, j.ID); err != nil || !ok {
						t.Fatal(ok, err)
					}
				}
			case k == 7:
				op = "pause " + g
				b.LanePause(ctx, q, g)
			case k == 8:
				op = "resume " + g
				b.LaneResume(ctx, q, g)
			default:
				n := int64(r.IntN(3))
				op = "ceiling " + g + " " + strconv.FormatInt(n, 10)
				b.LaneCeiling(ctx, q, g, n)
			}
			in.ringInvariant(q, strconv.Itoa(step)+": "+op)
		}
		// Starvation bound: with N serviceable lanes, each is served within N claims.
		for _, g := range lanes {
			b.LaneResume(ctx, q, g)
			b.LaneCeiling(ctx, q, g, 0)
		}
		for len(in.ring(q)) > 0 {
			n := len(in.ring(q))
			seen := map[string]bool{}
			for i := 0; i < n; i++ {
				j, err := b.LaneClaim(ctx, q, bus.Ms(10*time.Second))
				if err != nil || j == nil {
					t.Fatalf("claim %d of %d: %v %v", i, n, j, err)
				}
				seen[j.Lane] = true
				held = append(held, j)
			}
			if len(seen) != n {
				t.Fatalf("%d claims over %d serviceable lanes served only %v", n, n, seen)
			}
			in.ringInvariant(q, "starvation round")
		}
		for _, j := range held {
			if err := j.Complete(ctx); err != nil {
				t.Fatal(err)
			}
		}
		in.ringInvariant(q, "final")
		if res := in.residue(q); len(res) != 0 {
			t.Fatalf("left after draining: %v", res)
		}
	}
}
