package contracts

import (
	"fmt"
	"maps"
	"slices"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// c13 is contract C13: pause & limit.
var c13 = Contract{ID: "C13", Name: "pause & limit",
	Rule: "a paused lane keeps its backlog and leaves the ring, resume returns it; a lane at its ceiling answers empty and reopens on complete; a queue-wide pause is atomic with the claim",
	clauses: []clause{
		fieldsClause(fieldGroup{[]string{"lane_ceiling"}, ownField}),
		{name: "paused-lane-keeps-backlog", body: pausedLaneKeepsBacklog},
		{name: "ceiling-reopens-on-complete", body: ceilingReopensOnComplete},
		{name: "ceiling-boundaries", body: ceilingBoundaries},
		{name: "ceiling-rejoin-every-release", body: ceilingRejoin},
		{name: "lane-pause-resume-order", body: pauseResumeOrder},
		{name: "paused-lane-stays-out", body: pausedLaneStaysOut},
		{name: "queue-pause-atomic-with-claim", body: queuePauseAtomicWithClaim},
		{name: "walk-limits", body: walkLimits.body},
	},
}

func pausedLaneKeepsBacklog(t *T) {
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
}

func ceilingReopensOnComplete(t *T) {
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
}

func queuePauseAtomicWithClaim(t *T) {
	plain := t.enqueue("orders", "plain")
	laned := t.laneEnqueue("orders", "east", "laned")
	westID := t.laneEnqueue("orders", "west", "west") // two ring lanes: a rotation would show
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
	t.do("DEL", t.q("orders").Wake()) // so an arm by the empty claims would show
	before := t.snapshot()
	m := t.mark()
	t.check(t.claim("orders", 30000) == nil, ruleQueuePause, "claim on a paused queue answers empty", "a job")
	t.check(t.laneClaim("orders", 30000) == nil, ruleQueuePauseLane, "lane_claim on a paused queue answers empty", "a job")
	t.check(t.llen(t.q("orders").Wake()) == 0, ruleClaimRearm, "an empty claim never arms the wake, paused or not (A13)", "%d token(s)", t.llen(t.q("orders").Wake()))
	d := diff(before, t.snapshot())
	t.check(d == "", ruleQueuePauseRing, "paused claims change nothing (lane state and ring kept)", "%s", d)
	ran := t.scriptsRun(m)
	t.check(ran[lua.Claim] && ran[lua.LaneClaim], ruleQueuePause,
		"the pause is decided inside the claim scripts: both claim and lane_claim ran", "scripts run: %v", slices.Sorted(maps.Keys(ran)))
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "resume")
	c := t.mustClaim("orders", 30000)
	t.check(c.ID == plain, ruleQueuePause, "after resume the plain job", "%s", c.ID)
	lc := t.laneClaim("orders", 30000)
	t.check(lc != nil && lc.ID == laned, ruleQueuePauseRing, "after resume the lane job at the ring's head, as before the pause", "%+v", lc)
	lc = t.laneClaim("orders", 30000)
	t.check(lc != nil && lc.ID == westID, ruleQueuePauseRing, "then the next lane's job", "%+v", lc)
	t.ringIsServiceable("orders", []string{"east", "west"}, "after resume")
}

// ceilingBoundaries: n claims under ceiling n and the n+1st empty; lowering the ceiling to or
// below the active count takes the lane out of the ring; raising it (or 0, no ceiling) brings
// the lane back at the ring's tail and arms the wake (A7, A13, A14).
func ceilingBoundaries(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 6 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, ruleCeilingBoundary)
	}
	t.mEnqueue(m, "west", "w0", 0, ruleCeilingBoundary)
	t.mCeiling(m, "east", 2, ruleCeilingBoundary)
	var held []string
	for range 3 { // east, west, east: the second east claim puts it at its ceiling
		if x := t.mClaim(m, 30000, ruleCeilingBoundary); m.LaneOf[x] == "east" {
			held = append(held, x)
		}
	}
	t.drainWake(m)
	t.mClaim(m, 30000, ruleCeilingBoundary) // east at 2 of 2, west drained: empty, no arm
	t.mComplete(m, held[1], ruleCeilingRejoin)
	t.mCeiling(m, "east", 3, ruleCeilingRaise) // in the ring already: keeps its place
	held[1] = t.mClaim(m, 30000, ruleCeilingBoundary)
	t.mEnqueue(m, "west", "w1", 0, ruleRingTail)
	t.drainWake(m)
	t.mCeiling(m, "east", 2, ruleCeilingLowered) // active 2 of 2: leaves the ring
	t.mCeiling(m, "east", 1, ruleCeilingLowered) // below its active count: stays out
	t.mComplete(m, held[0], ruleCeilingLowered)  // 1 of 1: still at its ceiling
	t.drainWake(m)
	t.mCeiling(m, "east", 3, ruleCeilingRaise) // rejoins behind west, wake armed
	t.mClaim(m, 30000, ruleCeilingBoundary)
	x := t.mClaim(m, 30000, ruleCeilingBoundary)
	t.mCeiling(m, "east", 1, ruleCeilingLowered)
	t.drainWake(m)
	t.mCeiling(m, "east", 0, ruleCeilingZero) // no ceiling: rejoins, field gone, wake armed
	t.mClaim(m, 30000, ruleCeilingZero)
	t.mComplete(m, x, ruleCeilingZero)
	t.mClaim(m, 30000, ruleCeilingZero)
}

// ceilingRejoin: a lane at ceiling 1 rejoins the ring at its tail, with the wake armed, on each
// of the complete, retry (into the lane or scheduled), fail and reap that bring it below (A7,
// A13); a second lane keeps the ring's order observable. Then a reap that leaves the lane one
// job still active lowers its count by one, not to zero (under ceiling 2, two claimed).
func ceilingRejoin(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 6 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, ruleCeilingRejoin)
		t.mEnqueue(m, "west", fmt.Sprint("w", i), 0, ruleCeilingRejoin)
	}
	t.mCeiling(m, "east", 1, ruleCeilingRejoin)
	// claimEast lane-claims until east's next job comes (leased for lease), completing west's.
	claimEast := func(lease int64) string {
		for {
			t.drainWake(m) // each claim re-arms exactly while ring lanes remain
			x := t.mClaim(m, leaseFor(m, "east", lease), ruleCeilingRejoin)
			switch {
			case x == "":
				t.fail(ruleCeilingRejoin, "east is claimed again after it rejoined", "an empty reply")
			case m.LaneOf[x] == "east":
				return x
			default:
				t.mComplete(m, x, ruleCeilingRejoin)
			}
		}
	}
	release := []struct {
		lease int64
		op    func(id string)
	}{
		{30000, func(id string) { t.mComplete(m, id, ruleCeilingRejoin) }},
		{30000, func(id string) { t.mRetry(m, id, 5, 0, ruleCeilingRejoin) }},
		{30000, func(id string) { t.mRetry(m, id, 5, 50, ruleCeilingRejoin) }},
		{30000, func(id string) { t.mFail(m, id, ruleCeilingRejoin) }},
		{150, func(id string) { t.mReap(m, []string{id}, 5, ruleCeilingRejoin) }},
		{30000, func(id string) { t.mRetry(m, id, 1, 0, ruleCeilingRejoin) }},     // dead at max
		{150, func(id string) { t.mReap(m, []string{id}, 1, ruleCeilingRejoin) }}, // dead at max
	}
	for _, r := range release {
		east := claimEast(r.lease) // east at its ceiling
		t.drainWake(m)
		r.op(east)
	}
	t.mEnqueue(m, "east", "e6", 0, ruleLaneReap)
	t.mEnqueue(m, "east", "e7", 0, ruleLaneReap)
	t.mCeiling(m, "east", 2, ruleLaneReap)
	first := claimEast(150)
	claimEast(30000)
	t.drainWake(m)
	t.mReap(m, []string{first}, 5, ruleLaneReap) // active:east 2 → 1, the model's lanes hash
}

// pauseResumeOrder: lane_pause keeps the backlog and takes the lane out of the ring without
// arming; a release or an enqueue does not bring a paused lane back; lane_resume appends it at
// the tail and arms the wake; resuming a lane with nothing pending arms nothing (A13, A14).
func pauseResumeOrder(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for _, g := range []string{"a", "b", "c"} {
		t.mEnqueue(m, g, g+"0", 0, ruleLanePauseRing)
		t.mEnqueue(m, g, g+"1", 0, ruleLanePauseRing)
	}
	a0 := t.mClaim(m, 30000, ruleLanePauseRing) // [b c a]
	b0 := t.mClaim(m, 30000, ruleLanePauseRing) // [c a b]
	t.drainWake(m)
	t.mPause(m, "a", ruleLanePauseRing) // [c b]
	t.mComplete(m, a0, ruleLanePauseRing)
	t.mEnqueue(m, "a", "a2", 0, ruleLanePauseRing)
	t.mRetry(m, b0, 5, 0, ruleLaneRetry)
	t.mPause(m, "b", ruleLanePauseRing) // [c]
	for range 3 {
		if x := t.mClaim(m, 30000, ruleLanePauseRing); x != "" {
			t.mComplete(m, x, ruleLanePauseRing)
		}
	}
	t.drainWake(m)
	t.mResume(m, "b", ruleLaneResume) // [b]
	t.mEnqueue(m, "c", "c2", 0, ruleRingTail)
	t.drainWake(m)
	t.mResume(m, "a", ruleLaneResume) // [b c a]
	t.mPause(m, "d", ruleLanePauseRing)
	t.drainWake(m)
	t.mResume(m, "d", ruleLaneResume) // nothing pending: no rejoin, no arm
	for {
		x := t.mClaim(m, 30000, ruleLaneResume)
		if x == "" {
			break
		}
		t.mComplete(m, x, ruleLaneResume)
	}
	// a ceiling set on a lane before it has any job holds from its first enqueue
	t.mCeiling(m, "e", 1, ruleCeilingBoundary)
	t.mEnqueue(m, "e", "e0", 0, ruleCeilingBoundary)
	t.mEnqueue(m, "e", "e1", 0, ruleCeilingBoundary)
	e0 := t.mClaim(m, 30000, ruleCeilingBoundary)
	t.mClaim(m, 30000, ruleCeilingBoundary) // at its ceiling: empty
	t.mComplete(m, e0, ruleCeilingRejoin)
	t.mComplete(m, t.mClaim(m, 30000, ruleCeilingBoundary), ruleCeilingRejoin)
}

// pausedLaneStaysOut: every op that returns work to a paused lane (retry, promote, revive, reap)
// or changes its ceiling leaves it out of the ring; a resume does not bring back a lane at its
// ceiling, an enqueue does not bring back a lane at its ceiling; each arms the wake exactly as
// A13 says (A6–A7, A13, A14).
func pausedLaneStaysOut(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 5 {
		t.mEnqueue(m, "p", fmt.Sprint("p", i), 0, ruleLanePauseRing)
		t.mEnqueue(m, "o", fmt.Sprint("o", i), 0, ruleLanePauseRing)
	}
	var held []string
	for range 6 {
		if x := t.mClaim(m, 30000, ruleLanePauseRing); m.LaneOf[x] == "p" {
			held = append(held, x)
		}
	}
	t.mPause(m, "p", ruleLanePauseRing)
	t.drainWake(m)
	t.mRetry(m, held[0], 5, 0, ruleLanePauseRing)
	t.mRetry(m, held[1], 5, 40, ruleLanePauseRing)
	t.drainWake(m)
	t.mPromote(m, held[1:2], ruleLanePauseRing)
	t.mFail(m, held[2], ruleLanePauseRing)
	t.drainWake(m)
	t.mRevive(m, held[2], ruleLanePauseRing)
	t.drainWake(m)
	t.mCeiling(m, "p", 1, ruleLanePauseRing) // paused: stays out, nothing armed
	t.mCeiling(m, "p", 2, ruleLanePauseRing)
	t.mResume(m, "p", ruleLaneResume) // active 0 < 2: rejoins behind o
	var ps []string                   // claim until p sits at its ceiling of 2, completing o's jobs
	for m.Active["p"] < 2 {
		switch x := t.mClaim(m, leaseFor(m, "p", 150), ruleCeilingBoundary); {
		case x == "":
			t.fail(ruleCeilingBoundary, "lane p is claimed up to its ceiling of 2", "an empty reply")
		case m.LaneOf[x] == "p":
			ps = append(ps, x)
		default:
			t.mComplete(m, x, ruleCeilingBoundary)
		}
	}
	t.mEnqueue(m, "p", "p-at-ceiling", 0, ruleCeilingBoundary) // at its ceiling: stays out
	t.mPause(m, "p", ruleLanePauseRing)
	t.drainWake(m)
	t.mResume(m, "p", ruleLaneResume) // at its ceiling: stays out, nothing armed
	t.mPause(m, "p", ruleLanePauseRing)
	t.mReap(m, ps, 5, ruleLanePauseRing) // back into a paused lane: stays out
	for _, id := range m.IDs("active") {
		t.mComplete(m, id, ruleLanePauseRing)
	}
	t.drainWake(m)
	t.mResume(m, "p", ruleLaneResume)
	for x := t.mClaim(m, 30000, ruleLaneResume); x != ""; x = t.mClaim(m, 30000, ruleLaneResume) {
		t.mComplete(m, x, ruleLaneResume)
	}
}

// leaseFor is short only when the model says the next lane claim takes lane g (a job the clause
// lets expire); every other claim gets a lease no slow machine outlives before its complete.
func leaseFor(m *laneModel, g string, short int64) int64 {
	if len(m.Ring) > 0 && m.Ring[0] == g {
		return short
	}
	return 30000
}
