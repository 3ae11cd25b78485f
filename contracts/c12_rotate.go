package contracts

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// serviceable computes, from the keyspace, the lanes the ring must hold: pending ids, not
// paused, below the ceiling (canon §4 Lanes, A7).
func (t *T) serviceable(qn string, lanes []string) []string {
	q := t.q(qn)
	h := t.hash(q.Lanes())
	var out []string
	for _, g := range lanes {
		n, _, _ := t.do("ZCARD", laneKey(q, g))
		if n[0] == "0" || h["paused:"+g] == "1" {
			continue
		}
		var ceiling, active int64
		fmt.Sscan(h["ceiling:"+g], &ceiling)
		fmt.Sscan(h["active:"+g], &active)
		if ceiling > 0 && active >= ceiling {
			continue
		}
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// ringIsServiceable checks that the ring holds exactly the serviceable lanes, each once.
func (t *T) ringIsServiceable(qn string, lanes []string, step string) {
	ring := t.list(t.q(qn).Ring())
	sorted := append([]string(nil), ring...)
	sort.Strings(sorted)
	want := t.serviceable(qn, lanes)
	t.cover(ruleLanes)
	if strings.Join(sorted, ",") != strings.Join(want, ",") {
		t.fail(ruleLanes, fmt.Sprintf("%s: the ring holds exactly the serviceable lanes %v, each once", step, want), fmt.Sprintf("ring %v", ring))
	}
}

// c12 is contract C12: rotate.
var c12 = Contract{ID: "C12", Name: "rotate",
	Rule: "lane claims rotate strictly across serviceable lanes; after every step the ring equals the serviceable set; starvation ≤ N−1",
	specs: func(s spec) {
		s.clause("strict-rotation", clauseOpts{}, func(t *T) {
			lanes := []string{"east", "north", "west"}
			jobs := map[string][]string{}
			for i := range 3 {
				for _, g := range lanes {
					jobs[g] = append(jobs[g], t.laneEnqueue("orders", g, fmt.Sprintf("%s-%d", g, i)))
				}
			}
			t.ringIsServiceable("orders", lanes, "after the enqueues")
			var seq []string
			next := map[string]int{}
			t.cover(ruleLanes)
			for i := range 9 {
				head := t.list(t.q("orders").Ring())
				c := t.laneClaim("orders", 30000)
				if c == nil {
					t.fail(ruleLanes, fmt.Sprintf("lane claim %d of 9 returns a job", i+1), "an empty reply")
				}
				t.check(len(head) > 0 && c.Lane == head[0], ruleLanes, fmt.Sprintf("claim %d takes the lane at the ring's head %v", i+1, head), "it took lane %q", c.Lane)
				t.check(c.ID == jobs[c.Lane][next[c.Lane]], ruleLanes, "the lane's oldest id", "claim %d of lane %s got %s, want %s", i+1, c.Lane, c.ID, jobs[c.Lane][next[c.Lane]])
				next[c.Lane]++
				seq = append(seq, c.Lane)
				t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
			}
			t.cover(ruleLanes)
			for i := range seq {
				if seq[i] != seq[i%3] || (i < 3 && slices.Index(seq[:i], seq[i]) >= 0) {
					t.fail(ruleLanes, "claims rotate strictly: every lane once per round, in the same order", strings.Join(seq, " "))
				}
			}
			t.check(t.laneClaim("orders", 30000) == nil, ruleLanes, "an empty reply once every lane is drained", "a job")
		})
		s.clause("ring-equals-serviceable", clauseOpts{}, func(t *T) {
			lanes := []string{"east", "north"}
			t.laneEnqueue("orders", "east", "e1")
			t.ringIsServiceable("orders", lanes, "after the first enqueue")
			t.laneEnqueue("orders", "north", "n1")
			t.laneEnqueue("orders", "north", "n2")
			t.laneEnqueue("orders", "east", "e2")
			t.ringIsServiceable("orders", lanes, "after four enqueues into two lanes")
			for i := range 3 {
				t.laneClaim("orders", 30000)
				t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
			}
			t.laneEnqueue("orders", "east", "e3")
			t.ringIsServiceable("orders", lanes, "after an enqueue into a drained lane")
			t.laneClaim("orders", 30000)
			t.laneClaim("orders", 30000)
			t.ringIsServiceable("orders", lanes, "after draining both lanes")
			t.check(len(t.list(t.q("orders").Ring())) == 0, ruleLanes, "an empty ring once no lane has work", "%v", t.list(t.q("orders").Ring()))
		})
		s.clause("starvation-bounded", clauseOpts{}, func(t *T) {
			lanes := []string{"a", "b", "c", "d", "late"}
			for _, g := range lanes[:4] {
				for i := range 4 {
					t.laneEnqueue("orders", g, fmt.Sprint(g, i))
				}
			}
			t.laneClaim("orders", 30000)
			t.laneClaim("orders", 30000)
			late := t.laneEnqueue("orders", "late", "late")
			n := len(t.serviceable("orders", lanes))
			waited := 0
			t.cover(ruleStarve)
			for {
				c := t.laneClaim("orders", 30000)
				if c == nil {
					t.fail(ruleStarve, "the late lane is claimed", "the lanes ran dry first")
				}
				if c.ID == late {
					break
				}
				waited++
				if waited > n-1 {
					t.fail(ruleStarve, fmt.Sprintf("with %d serviceable lanes the late lane waits at most %d lane claims", n, n-1), fmt.Sprintf("it waited %d so far", waited))
				}
			}
		})
	},
}
