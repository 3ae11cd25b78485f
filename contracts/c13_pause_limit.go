package contracts

import (
	"maps"
	"slices"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// c13 is contract C13: pause & limit.
var c13 = Contract{ID: "C13", Name: "pause & limit",
	Rule: "a paused lane keeps its backlog and leaves the ring, resume returns it; a lane at its ceiling answers empty and reopens on complete; a queue-wide pause is atomic with the claim",
	specs: func(s spec) {
		s.clause("paused-lane-keeps-backlog", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			lanes := []string{"east", "west"}
			e1 := t.laneEnqueue("orders", "east", "e1")
			t.laneEnqueue("orders", "east", "e2")
			t.laneEnqueue("orders", "west", "w1")
			t.laneEnqueue("orders", "west", "w2")
			t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), ruleLanes, "lane_pause")
			t.check(!slices.Contains(t.list(q.Ring()), "east"), ruleLanes, "a paused lane leaves the ring", "ring %v", t.list(q.Ring()))
			t.ringIsServiceable("orders", lanes, "after lane_pause east")
			for i := range 2 {
				c := t.laneClaim("orders", 30000)
				t.check(c != nil && c.Lane == "west", ruleLanes, "only the unpaused lane is claimed", "claim %d: %+v", i+1, c)
			}
			t.check(t.laneClaim("orders", 30000) == nil, ruleLanes, "an empty reply: the only lane with work is paused", "a job")
			n, _, _ := t.do("ZCARD", laneKey(q, "east"))
			t.check(n[0] == "2", ruleLanes, "the paused lane keeps its backlog of 2", "%s", n[0])
			t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), ruleLanes, "lane_resume")
			t.ringIsServiceable("orders", lanes, "after lane_resume east")
			c := t.laneClaim("orders", 30000)
			t.check(c != nil && c.ID == e1, ruleLanes, "resume returns the lane: its oldest job next", "%+v", c)
		})
		s.clause("ceiling-reopens-on-complete", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			lanes := []string{"east"}
			ids := []string{t.laneEnqueue("orders", "east", "1"), t.laneEnqueue("orders", "east", "2"), t.laneEnqueue("orders", "east", "3")}
			t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 1}), ruleCeiling, "lane_ceiling")
			c1 := t.laneClaim("orders", 30000)
			t.check(c1 != nil && c1.ID == ids[0], ruleCeiling, "the first claim under ceiling 1", "%+v", c1)
			t.ringIsServiceable("orders", lanes, "with the lane at its ceiling")
			t.check(t.laneClaim("orders", 30000) == nil, ruleCeiling, "a lane at its ceiling answers empty", "a job")
			t.complete("orders", c1.ID, c1.Token)
			t.ringIsServiceable("orders", lanes, "after the complete that brings the lane below its ceiling")
			t.check(slices.Contains(t.list(q.Ring()), "east"), ruleCeiling, "the lane reopens on complete", "ring %v", t.list(q.Ring()))
			c2 := t.laneClaim("orders", 30000)
			t.check(c2 != nil && c2.ID == ids[1], ruleCeiling, "the lane's next job after the complete", "%+v", c2)
			t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 0}), ruleCeiling, "lane_ceiling 0")
			t.ringIsServiceable("orders", lanes, "after lane_ceiling 0 (no ceiling)")
			c3 := t.laneClaim("orders", 30000)
			t.check(c3 != nil && c3.ID == ids[2], ruleCeiling, "ceiling 0 removes the limit: a second job active at once", "%+v", c3)
		})
		s.clause("queue-pause-atomic-with-claim", clauseOpts{}, func(t *T) {
			plain := t.enqueue("orders", "plain")
			laned := t.laneEnqueue("orders", "east", "laned")
			t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
			before := t.snapshot()
			m := t.mark()
			t.check(t.claim("orders", 30000) == nil, ruleQueuePause, "claim on a paused queue answers empty", "a job")
			t.check(t.laneClaim("orders", 30000) == nil, ruleQueuePause, "lane_claim on a paused queue answers empty", "a job")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleQueuePause, "paused claims change nothing (lane state and ring kept)", "%s", d)
			ran := map[string]bool{}
			for _, l := range t.portCommands(m) {
				if l.Cmd() == "EVALSHA" {
					ran[argAt(l, 1)] = true
				}
			}
			b := t.cfg.Bundle
			t.check(ran[b.MustScript(lua.Claim).SHA1] && ran[b.MustScript(lua.LaneClaim).SHA1], ruleQueuePause,
				"the pause is decided inside the claim scripts: both claim and lane_claim ran", "scripts run: %v", slices.Sorted(maps.Keys(ran)))
			t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "resume")
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == plain, ruleQueuePause, "after resume the plain job", "%s", c.ID)
			lc := t.laneClaim("orders", 30000)
			t.check(lc != nil && lc.ID == laned, ruleQueuePause, "after resume the lane job", "%+v", lc)
			t.ringIsServiceable("orders", []string{"east"}, "after resume")
		})
	},
}
