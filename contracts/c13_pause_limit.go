package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/resp"
)

// c13 is contract C13: pause & limit.
var c13 = Contract{ID: "C13", Name: "pause & limit",
	Rule: "a paused lane keeps its backlog and leaves the ring, resume returns it; a lane at its ceiling answers empty and reopens on complete; a queue-wide pause is atomic with the claim",
	clauses: []clause{
		fieldsClause(fieldGroup{[]string{"lane_ceiling"}, ownField}),
		{name: "paused-lane-keeps-backlog", body: pausedLaneKeepsBacklog},
		{name: "ceiling-reopens-on-complete", body: ceilingReopensOnComplete},
		{name: "ceiling-boundaries", body: ceilingBoundaries},
		{name: "ceiling-lowered-every-release", body: ceilingLoweredEveryRelease},
		{name: "ceiling-rejoin-every-release", body: ceilingRejoin},
		{name: "revive-at-the-ceiling", body: reviveAtTheCeiling},
		{name: "complete-batch-ring-as-complete", body: completeBatchRing},
		{name: "lane-pause-resume-order", body: pauseResumeOrder},
		{name: "paused-lane-stays-out", body: pausedLaneStaysOut},
		{name: "queue-pause-atomic-with-claim", body: queuePauseAtomicWithClaim},
		{name: "discarded-replies-as-documented", body: discardedRepliesAsDocumented},
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
	t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), rules.Lanes, "lane_pause")
	t.check(!slices.Contains(t.list(q.Ring()), "east"), rules.Lanes, "a paused lane leaves the ring", "ring %v", t.list(q.Ring()))
	t.ringIsServiceable("orders", lanes, "after lane_pause east")
	for i := range 2 {
		c := t.laneClaim("orders", workLease)
		t.check(c != nil && c.Lane == "west", rules.Lanes, "only the unpaused lane is claimed", "claim %d: %+v", i+1, c)
	}
	t.check(t.laneClaim("orders", workLease) == nil, rules.Lanes, "an empty reply: the only lane with work is paused", "a job")
	n, _, _ := t.do("ZCARD", laneKey(q, "east"))
	t.check(n[0] == "2", rules.Lanes, "the paused lane keeps its backlog of 2", "%s", n[0])
	t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), rules.Lanes, "lane_resume")
	t.ringIsServiceable("orders", lanes, "after lane_resume east")
	c := t.laneClaim("orders", workLease)
	t.check(c != nil && c.ID == e1, rules.Lanes, "resume returns the lane: its oldest job next", "%+v", c)
}

func ceilingReopensOnComplete(t *T) {
	q := t.q("orders")
	lanes := []string{"east"}
	ids := []string{t.laneEnqueue("orders", "east", "1"), t.laneEnqueue("orders", "east", "2"), t.laneEnqueue("orders", "east", "3")}
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 1}), rules.Ceiling, "lane_ceiling")
	c1 := t.laneClaim("orders", workLease)
	t.check(c1 != nil && c1.ID == ids[0], rules.Ceiling, "the first claim under ceiling 1", "%+v", c1)
	t.ringIsServiceable("orders", lanes, "with the lane at its ceiling")
	t.check(t.laneClaim("orders", workLease) == nil, rules.Ceiling, "a lane at its ceiling answers empty", "a job")
	t.complete("orders", c1.ID, c1.Token)
	t.ringIsServiceable("orders", lanes, "after the complete that brings the lane below its ceiling")
	t.check(slices.Contains(t.list(q.Ring()), "east"), rules.Ceiling, "the lane reopens on complete", "ring %v", t.list(q.Ring()))
	c2 := t.laneClaim("orders", workLease)
	t.check(c2 != nil && c2.ID == ids[1], rules.Ceiling, "the lane's next job after the complete", "%+v", c2)
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 0}), rules.Ceiling, "lane_ceiling 0")
	t.ringIsServiceable("orders", lanes, "after lane_ceiling 0 (no ceiling)")
	c3 := t.laneClaim("orders", workLease)
	t.check(c3 != nil && c3.ID == ids[2], rules.Ceiling, "ceiling 0 removes the limit: a second job active at once", "%+v", c3)
}

func queuePauseAtomicWithClaim(t *T) {
	plain := t.enqueue("orders", "plain")
	laned := t.laneEnqueue("orders", "east", "laned")
	westID := t.laneEnqueue("orders", "west", "west") // two ring lanes: a rotation would show
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), rules.QueuePause, "pause")
	t.do("DEL", t.q("orders").Wake()) // so an arm by the empty claims would show
	before := t.snapshot()
	m := t.mark()
	t.check(t.claim("orders", workLease) == nil, rules.QueuePause, "claim on a paused queue answers empty", "a job")
	t.check(t.laneClaim("orders", workLease) == nil, rules.QueuePauseLane, "lane_claim on a paused queue answers empty", "a job")
	t.check(t.llen(t.q("orders").Wake()) == 0, rules.ClaimRearm, "an empty claim never arms the wake, paused or not (A13)", "%d token(s)", t.llen(t.q("orders").Wake()))
	d := diff(before, t.snapshot())
	t.check(d == "", rules.QueuePauseRing, "paused claims change nothing (lane state and ring kept)", "%s", d)
	ran := t.scriptsRun(m)
	t.check(ran[lua.Claim] && ran[lua.LaneClaim], rules.QueuePause,
		"the pause is decided inside the claim scripts: both claim and lane_claim ran", "scripts run: %v", slices.Sorted(maps.Keys(ran)))
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), rules.QueuePause, "resume")
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == plain, rules.QueuePause, "after resume the plain job", "%s", c.ID)
	lc := t.laneClaim("orders", workLease)
	t.check(lc != nil && lc.ID == laned, rules.QueuePauseRing, "after resume the lane job at the ring's head, as before the pause", "%+v", lc)
	lc = t.laneClaim("orders", workLease)
	t.check(lc != nil && lc.ID == westID, rules.QueuePauseRing, "then the next lane's job", "%+v", lc)
	t.ringIsServiceable("orders", []string{"east", "west"}, "after resume")
}

// ceilingBoundaries: n claims under ceiling n and the n+1st empty; lowering the ceiling to or
// below the active count takes the lane out of the ring; raising it (or 0, no ceiling) brings
// the lane back at the ring's tail and arms the wake (A7, A13, A14).
func ceilingBoundaries(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 6 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, rules.CeilingBoundary)
	}
	t.mEnqueue(m, "west", "w0", 0, rules.CeilingBoundary)
	t.mCeiling(m, "east", 2, rules.CeilingBoundary)
	var held []string
	for range 3 { // east, west, east: the second east claim puts it at its ceiling
		if x := t.mClaim(m, workLease, rules.CeilingBoundary); m.LaneOf[x] == "east" {
			held = append(held, x)
		}
	}
	t.drainWake(m)
	t.mClaim(m, workLease, rules.CeilingBoundary) // east at 2 of 2, west drained: empty, no arm
	t.mComplete(m, held[1], rules.CeilingRejoin)
	t.mCeiling(m, "east", 3, rules.CeilingRaise) // in the ring already: keeps its place
	held[1] = t.mClaim(m, workLease, rules.CeilingBoundary)
	t.mEnqueue(m, "west", "w1", 0, rules.RingTail)
	t.drainWake(m)
	t.mCeiling(m, "east", 2, rules.CeilingLowered) // active 2 of 2: leaves the ring
	t.mCeiling(m, "east", 1, rules.CeilingLowered) // below its active count: stays out
	t.mComplete(m, held[0], rules.CeilingLowered)  // 1 of 1: still at its ceiling
	t.drainWake(m)
	t.mCeiling(m, "east", 3, rules.CeilingRaise) // rejoins behind west, wake armed
	t.mClaim(m, workLease, rules.CeilingBoundary)
	x := t.mClaim(m, workLease, rules.CeilingBoundary)
	t.mCeiling(m, "east", 1, rules.CeilingLowered)
	t.drainWake(m)
	t.mCeiling(m, "east", 0, rules.CeilingZero) // no ceiling: rejoins, field gone, wake armed
	t.mClaim(m, workLease, rules.CeilingZero)
	t.mComplete(m, x, rules.CeilingZero)
	t.mClaim(m, workLease, rules.CeilingZero)
}

// ceilingLoweredEveryRelease: a lane with two active jobs and a backlog, its ceiling lowered to
// 1, stays out of the ring with no wake armed when a complete, a fail or a retry into the lane
// releases one of them: 1 of 1 is still at its ceiling (A7, A14). Each op on a queue of its own;
// ceilingBoundaries takes this step with complete only.
func ceilingLoweredEveryRelease(t *T) {
	for _, op := range []string{"complete", "fail", "retry"} {
		m := newLaneModel("lowered-" + op)
		m.watchWake = true
		for i := range 3 {
			t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, rules.CeilingLowered)
		}
		t.mCeiling(m, "east", 2, rules.CeilingLowered)
		first := t.mClaim(m, workLease, rules.CeilingLowered)
		t.mClaim(m, workLease, rules.CeilingLowered)
		t.mCeiling(m, "east", 1, rules.CeilingLowered) // 2 of 1: out of the ring
		t.drainWake(m)
		switch op {
		case "complete":
			t.mComplete(m, first, rules.CeilingLowered)
		case "fail":
			t.mFail(m, first, rules.CeilingLowered)
		case "retry":
			t.mRetry(m, first, 5, 0, rules.CeilingLowered)
		}
	}
}

// reviveAtTheCeiling: a dead lane job revived into its lane while the lane is held at its ceiling
// (two claimed under ceiling 2, one failed dead, the ceiling lowered to 1) gives the lane a job
// but not a place in the ring (A7: at its ceiling it stays out), so a claim finds nothing; the
// lane joins once its active job completes. Every other revive clause revives into a lane below
// its ceiling, where a revive that read the lane's active count as 0 could not be told apart.
func reviveAtTheCeiling(t *T) {
	m := newLaneModel("orders")
	for i := range 2 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, rules.Ceiling)
	}
	t.mCeiling(m, "east", 2, rules.Ceiling)
	first := t.mClaim(m, workLease, rules.Ceiling)
	dead := t.mClaim(m, workLease, rules.Ceiling)
	t.mFail(m, dead, rules.Ceiling)
	t.mCeiling(m, "east", 1, rules.Ceiling) // 1 active of 1: at its ceiling
	t.mRevive(m, dead, rules.Ceiling)       // a job in the lane, still at its ceiling: out of the ring
	t.mClaim(m, workLease, rules.Ceiling)   // the model says empty
	t.mComplete(m, first, rules.Ceiling)    // below its ceiling again: it joins
	t.mClaim(m, workLease, rules.Ceiling)
}

// ceilingRejoin: a lane at ceiling 1 rejoins the ring at its tail, with the wake armed, on each
// of the complete, retry (into the lane or scheduled), fail and reap that bring it below (A7,
// A13); a second lane keeps the ring's order observable. Then a reap that leaves the lane one
// job still active lowers its count by one, not to zero (under ceiling 2, two claimed).
func ceilingRejoin(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 6 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, rules.CeilingRejoin)
		t.mEnqueue(m, "west", fmt.Sprint("w", i), 0, rules.CeilingRejoin)
	}
	t.mCeiling(m, "east", 1, rules.CeilingRejoin)
	// claimEast lane-claims until east's next job comes (leased for lease), completing west's.
	claimEast := func(lease int64) string {
		for {
			t.drainWake(m) // each claim re-arms exactly while ring lanes remain
			x := t.mClaim(m, leaseFor(m, "east", lease), rules.CeilingRejoin)
			switch {
			case x == "":
				t.fail(rules.CeilingRejoin, "east is claimed again after it rejoined", "an empty reply")
			case m.LaneOf[x] == "east":
				return x
			default:
				t.mComplete(m, x, rules.CeilingRejoin)
			}
		}
	}
	release := []struct {
		lease int64
		op    func(id string)
	}{
		{workLease, func(id string) { t.mComplete(m, id, rules.CeilingRejoin) }},
		{workLease, func(id string) { t.mRetry(m, id, 5, 0, rules.CeilingRejoin) }},
		{workLease, func(id string) { t.mRetry(m, id, 5, 50, rules.CeilingRejoin) }},
		{workLease, func(id string) { t.mFail(m, id, rules.CeilingRejoin) }},
		{150, func(id string) { t.mReap(m, []string{id}, 5, rules.CeilingRejoin) }},
		{workLease, func(id string) { t.mRetry(m, id, 1, 0, rules.CeilingRejoin) }}, // dead at max
		{150, func(id string) { t.mReap(m, []string{id}, 1, rules.CeilingRejoin) }}, // dead at max
	}
	for _, r := range release {
		east := claimEast(r.lease) // east at its ceiling
		t.drainWake(m)
		r.op(east)
	}
	t.mEnqueue(m, "east", "e6", 0, rules.LaneReap)
	t.mEnqueue(m, "east", "e7", 0, rules.LaneReap)
	t.mCeiling(m, "east", 2, rules.LaneReap)
	first := claimEast(150)
	claimEast(workLease)
	t.drainWake(m)
	t.mReap(m, []string{first}, 5, rules.LaneReap) // active:east 2 → 1, the model's lanes hash
}

// completeBatchRing holds complete_batch's lane bookkeeping to complete's (A17: each pair gets
// exactly its single-job script's effect; A7, A13, A14): the settled job of a paused lane with a
// backlog leaves it out of the ring; a batch that settles the last jobs of two lanes puts no
// empty lane in it; a lane whose ceiling was lowered below its active count stays out while a
// release leaves it at its ceiling, and rejoins at the tail with the wake armed on the release
// that brings it below — each time the whole lane keyspace and the wake held to the model.
func completeBatchRing(t *T) {
	t.batcher()
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 3 {
		t.mEnqueue(m, "p", fmt.Sprint("p", i), 0, rules.BatchComplete)
		t.mEnqueue(m, "c", fmt.Sprint("c", i), 0, rules.BatchComplete)
	}
	t.mEnqueue(m, "e", "e0", 0, rules.BatchComplete)
	t.mEnqueue(m, "o", "o0", 0, rules.BatchComplete)
	held := map[string][]string{}
	for range 6 { // p0 c0 e0 o0 p1 c1: two active in p and c, each with a backlog of one
		x := t.mClaim(m, workLease, rules.BatchComplete)
		held[m.LaneOf[x]] = append(held[m.LaneOf[x]], x)
	}
	t.mPause(m, "p", rules.LanePauseRing)
	t.mCeiling(m, "c", 1, rules.CeilingLowered) // 2 active over a ceiling of 1
	t.drainWake(m)
	t.mCompleteBatch(m, held["p"][:1], rules.BatchComplete)                        // paused, a backlog: stays out
	t.mCompleteBatch(m, append(held["e"], held["o"]...), rules.BatchComplete)      // both lanes emptied: out
	t.mCompleteBatch(m, held["c"][:1], rules.BatchComplete)                        // 1 of 1: still at its ceiling
	t.mCompleteBatch(m, []string{held["c"][1], held["p"][1]}, rules.BatchComplete) // c below: rejoins, armed
	t.mResume(m, "p", rules.LaneResume)
	for x := t.mClaim(m, workLease, rules.BatchComplete); x != ""; x = t.mClaim(m, workLease, rules.BatchComplete) {
		t.mCompleteBatch(m, []string{x}, rules.BatchComplete)
	}
}

// pauseResumeOrder: lane_pause keeps the backlog and takes the lane out of the ring without
// arming; a release or an enqueue does not bring a paused lane back; lane_resume appends it at
// the tail and arms the wake; resuming a lane with nothing pending arms nothing (A13, A14).
func pauseResumeOrder(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for _, g := range []string{"a", "b", "c"} {
		t.mEnqueue(m, g, g+"0", 0, rules.LanePauseRing)
		t.mEnqueue(m, g, g+"1", 0, rules.LanePauseRing)
	}
	a0 := t.mClaim(m, workLease, rules.LanePauseRing) // [b c a]
	b0 := t.mClaim(m, workLease, rules.LanePauseRing) // [c a b]
	t.drainWake(m)
	t.mPause(m, "a", rules.LanePauseRing) // [c b]
	t.mComplete(m, a0, rules.LanePauseRing)
	t.mEnqueue(m, "a", "a2", 0, rules.LanePauseRing)
	t.mRetry(m, b0, 5, 0, rules.LaneRetry)
	t.mPause(m, "b", rules.LanePauseRing) // [c]
	for range 3 {
		if x := t.mClaim(m, workLease, rules.LanePauseRing); x != "" {
			t.mComplete(m, x, rules.LanePauseRing)
		}
	}
	t.drainWake(m)
	t.mResume(m, "b", rules.LaneResume) // [b]
	t.mEnqueue(m, "c", "c2", 0, rules.RingTail)
	t.drainWake(m)
	t.mResume(m, "a", rules.LaneResume) // [b c a]
	t.mPause(m, "d", rules.LanePauseRing)
	t.drainWake(m)
	t.mResume(m, "d", rules.LaneResume) // nothing pending: no rejoin, no arm
	for {
		x := t.mClaim(m, workLease, rules.LaneResume)
		if x == "" {
			break
		}
		t.mComplete(m, x, rules.LaneResume)
	}
	// a ceiling set on a lane before it has any job holds from its first enqueue
	t.mCeiling(m, "e", 1, rules.CeilingBoundary)
	t.mEnqueue(m, "e", "e0", 0, rules.CeilingBoundary)
	t.mEnqueue(m, "e", "e1", 0, rules.CeilingBoundary)
	e0 := t.mClaim(m, workLease, rules.CeilingBoundary)
	t.mClaim(m, workLease, rules.CeilingBoundary) // at its ceiling: empty
	t.mComplete(m, e0, rules.CeilingRejoin)
	t.mComplete(m, t.mClaim(m, workLease, rules.CeilingBoundary), rules.CeilingRejoin)
}

// pausedLaneStaysOut: every op that returns work to a paused lane (retry, promote, revive, reap)
// or changes its ceiling leaves it out of the ring; a resume does not bring back a lane at its
// ceiling, an enqueue does not bring back a lane at its ceiling; each arms the wake exactly as
// A13 says (A6–A7, A13, A14).
func pausedLaneStaysOut(t *T) {
	m := newLaneModel("orders")
	m.watchWake = true
	for i := range 5 {
		t.mEnqueue(m, "p", fmt.Sprint("p", i), 0, rules.LanePauseRing)
		t.mEnqueue(m, "o", fmt.Sprint("o", i), 0, rules.LanePauseRing)
	}
	var held []string
	for range 6 {
		if x := t.mClaim(m, workLease, rules.LanePauseRing); m.LaneOf[x] == "p" {
			held = append(held, x)
		}
	}
	t.mPause(m, "p", rules.LanePauseRing)
	t.drainWake(m)
	t.mRetry(m, held[0], 5, 0, rules.LanePauseRing)
	t.mRetry(m, held[1], 5, 40, rules.LanePauseRing)
	t.drainWake(m)
	t.mPromote(m, held[1:2], rules.LanePauseRing)
	t.mFail(m, held[2], rules.LanePauseRing)
	t.drainWake(m)
	t.mRevive(m, held[2], rules.LanePauseRing)
	t.drainWake(m)
	t.mCeiling(m, "p", 1, rules.LanePauseRing) // paused: stays out, nothing armed
	t.mCeiling(m, "p", 2, rules.LanePauseRing)
	t.mResume(m, "p", rules.LaneResume) // active 0 < 2: rejoins behind o
	var ps []string                     // claim until p sits at its ceiling of 2, completing o's jobs
	for m.Active["p"] < 2 {
		switch x := t.mClaim(m, leaseFor(m, "p", 150), rules.CeilingBoundary); {
		case x == "":
			t.fail(rules.CeilingBoundary, "lane p is claimed up to its ceiling of 2", "an empty reply")
		case m.LaneOf[x] == "p":
			ps = append(ps, x)
		default:
			t.mComplete(m, x, rules.CeilingBoundary)
		}
	}
	t.mEnqueue(m, "p", "p-at-ceiling", 0, rules.CeilingBoundary) // at its ceiling: stays out
	t.mPause(m, "p", rules.LanePauseRing)
	t.drainWake(m)
	t.mResume(m, "p", rules.LaneResume) // at its ceiling: stays out, nothing armed
	t.mPause(m, "p", rules.LanePauseRing)
	t.mReap(m, ps, 5, rules.LanePauseRing) // back into a paused lane: stays out
	for _, id := range m.IDs("active") {
		t.mComplete(m, id, rules.LanePauseRing)
	}
	t.drainWake(m)
	t.mResume(m, "p", rules.LaneResume)
	for x := t.mClaim(m, workLease, rules.LaneResume); x != ""; x = t.mClaim(m, workLease, rules.LaneResume) {
		t.mComplete(m, x, rules.LaneResume)
	}
}

// leaseFor is short only when the model says the next lane claim takes lane g (a job the clause
// lets expire); every other claim gets a lease no slow machine outlives before its complete.
func leaseFor(m *laneModel, g string, short int64) int64 {
	if len(m.Ring) > 0 && m.Ring[0] == g {
		return short
	}
	return workLease
}

// discardedRepliesAsDocumented: the scripts whose reply the port protocol does not pass on
// (pause, resume, lane_pause, lane_resume, lane_ceiling, checkpoint, complete, fail: each
// "Reply: 1."). The first six are idempotent, so right after each op the kit sends the port's
// script call once more, exactly as MONITOR saw it, and reads the reply the port got: the
// integer 1, with nothing changed. complete and fail settle their job, so the kit sends the
// port's call for a twin job instead (twinReply).
func discardedRepliesAsDocumented(t *T) {
	id := t.laneEnqueue("orders", "east", "job")
	c := t.laneClaim("orders", workLease)
	if c == nil || c.ID != id {
		t.fail(rules.Lanes, "lane_claim takes the lane's only job "+id, claimText(c))
	}
	q, qa := protocol.QueueArgs{Queue: "orders"}, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 3}
	for _, op := range []struct {
		script string
		run    func() error
	}{
		{lua.Pause, func() error { return t.D.Pause(t.ctx, q) }},
		{lua.Resume, func() error { return t.D.Resume(t.ctx, q) }},
		{lua.LanePause, func() error { return t.D.LanePause(t.ctx, qa) }},
		{lua.LaneResume, func() error { return t.D.LaneResume(t.ctx, qa) }},
		{lua.LaneCeiling, func() error { return t.D.LaneCeiling(t.ctx, qa) }},
		{lua.Checkpoint, func() error {
			return t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("step")})
		}},
	} {
		m := t.mark()
		t.ok(op.run(), rules.ScriptReply, op.script)
		t.replayReply(m, op.script)
	}
	// complete and fail reply 1 too, and cannot be sent again: the kit sends the port's call for a
	// twin job, claimed beside the port's job, and reads the reply the port got.
	for _, op := range []struct {
		script string
		run    func(id string, token int64) error
	}{
		{lua.Complete, func(id string, token int64) error { return t.D.Complete(t.ctx, fa("orders", id, token)) }},
		{lua.Fail, func(id string, token int64) error {
			return t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, token), Error: "boom"})
		}},
	} {
		t.enqueue("orders", "own")
		t.enqueue("orders", "twin")
		own, twin := t.mustClaim("orders", workLease), t.mustClaim("orders", workLease)
		m := t.mark()
		t.ok(op.run(own.ID, own.Token), rules.ScriptReply, op.script)
		t.twinReply(m, op.script, own, twin)
	}
}

// twinReply sends the port's last call of script since mark, made for the claim own, once more for
// the claim twin (its row key, id and token in place of own's) and checks that the reply is the
// integer 1. A port that settled own with another script leaves nothing to read here.
func (t *T) twinReply(mark int, script string, own, twin *protocol.ClaimResult) {
	call := t.lastCall(mark, script)
	if len(call) == 0 {
		return // settled by another script (a port may use complete_batch: A17-1), whose reply the port passes on
	}
	q := t.q("orders")
	nk, err := strconv.Atoi(fmt.Sprint(call[2]))
	if err != nil || len(call) < 5+nk || call[3] != jobKey(q, own.ID) || call[3+nk] != own.ID {
		t.fail(rules.ScriptReply, "the port's "+script+" call names "+own.ID+"'s row in KEYS[1] and its id in ARGV[1]", fmt.Sprint(call...))
	}
	call[3], call[3+nk], call[4+nk] = jobKey(q, twin.ID), twin.ID, strconv.FormatInt(twin.Token, 10)
	v, err := t.admin.do(t.ctx, call...)
	if err != nil {
		t.harness("the port's %s call sent for a twin job: %v", script, err)
	}
	t.check(v.Type == resp.Integer && v.Int == 1, rules.ScriptReply, script+"'s reply to the port's call is the integer 1 (its header: Reply: 1.)", "%v %q", v.Type, v.Text())
}

// lastCall is the port's last EVALSHA of script since mark, as sendable arguments (nil: none).
func (t *T) lastCall(mark int, script string) []any {
	var call []any
	for _, l := range t.portCommands(mark) {
		if l.Cmd() == "EVALSHA" && t.law.scripts[argAt(l, 1)].Name == script {
			call = call[:0]
			for _, a := range l.Args {
				call = append(call, a)
			}
		}
	}
	return call
}

// replayReply sends the port's last call of script since mark again and checks that the reply is
// the integer 1 and that nothing changed.
func (t *T) replayReply(mark int, script string) {
	call := t.lastCall(mark, script)
	if len(call) == 0 {
		t.fail(rules.ScriptReply, "the op ran the script "+script, "no EVALSHA of it")
	}
	before := t.snapshot()
	v, err := t.admin.do(t.ctx, call...)
	if err != nil {
		t.harness("the port's %s call sent again: %v", script, err)
	}
	t.check(v.Type == resp.Integer && v.Int == 1, rules.ScriptReply, script+"'s reply to the port's call is the integer 1 (its header: Reply: 1.)", "%v %q", v.Type, v.Text())
	t.check(diff(before, t.snapshot()) == "", rules.ScriptReply, "the port's "+script+" call, sent again, changes nothing (idempotent)", "%s", diff(before, t.snapshot()))
}
