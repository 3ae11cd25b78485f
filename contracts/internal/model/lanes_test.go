package model

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/echomq/kit/reference/keys"
)

// TestLanesRotateAndRejoin: claims rotate the ring head to tail; a lane at its ceiling leaves
// the ring and rejoins at the tail on a release (A7, A14); a paused lane keeps its backlog out of
// the ring; the wake is owed only while work remains.
func TestLanesRotateAndRejoin(t *testing.T) {
	m := NewLanes("q")
	for i, g := range []string{"a", "b", "a", "b"} {
		m.Enqueue(string(rune('1'+i)), g, false)
	}
	if !slices.Equal(m.Ring, []string{"a", "b"}) || m.Wake != 1 {
		t.Fatalf("ring %v, wake %d", m.Ring, m.Wake)
	}
	m.SetCeiling("a", 1)
	if g, id := m.Claim(); g != "a" || id != "1" || !slices.Equal(m.Ring, []string{"b"}) {
		t.Fatalf("claim %s %s, ring %v: a at its ceiling leaves the ring", g, id, m.Ring)
	}
	m.Pause("b")
	if g, id := m.Claim(); g != "" || id != "" || len(m.Ring) != 0 {
		t.Fatalf("claim %s %s with a at its ceiling and b paused, ring %v", g, id, m.Ring)
	}
	m.Complete("1") // a drops below its ceiling and rejoins
	m.Resume("b")   // b rejoins behind it
	if !slices.Equal(m.Ring, []string{"a", "b"}) || m.Active["a"] != 0 || m.LaneOf["1"] != "" {
		t.Fatalf("ring %v, active %v, laneof %v", m.Ring, m.Active, m.LaneOf)
	}
	if h := m.LanesHash(); len(h) != 1 || h["ceiling:a"] != "1" {
		t.Errorf("lanes hash %v: only the ceiling (active at 0 deleted, b resumed)", h)
	}
	m.Wake = 0
	if _, id := m.Claim(); id != "3" || m.Wake != 1 {
		t.Errorf("claim %s, wake %d: re-armed while work remains", id, m.Wake)
	}
}

// TestMixNext: a walk's ops come from its table, name its lanes, and repeat for a seed.
func TestMixNext(t *testing.T) {
	q, err := keys.Queue("walk")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, k := range LaneMix.Kinds {
		kinds[k.Kind] = true
	}
	gen := func(seed uint64) []Op {
		r := rand.New(rand.NewPCG(seed, 1))
		p := Position{Model: New(q), IDs: []string{"JOB00000000001"}}
		var ops []Op
		for range 200 {
			ops = append(ops, LaneMix.Next(r, p))
		}
		return ops
	}
	a := gen(7)
	if !slices.Equal(a, gen(7)) {
		t.Fatal("one seed gives two walks")
	}
	for _, o := range a {
		if !kinds[o.Kind] && !(o.Kind == "enqueue" && kinds["lane_enqueue"]) {
			t.Errorf("op %s is not in the mix", o.Kind)
		}
		if o.Lane != "" && !slices.Contains(LaneMix.Lanes, o.Lane) {
			t.Errorf("op %s names lane %q", o.Kind, o.Lane)
		}
	}
}
