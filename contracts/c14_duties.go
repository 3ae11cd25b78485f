package contracts

import (
	"fmt"

	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/keys"
)

// armedBy empties the wake list from the harness's own connection, runs op from the port and
// requires the list to hold exactly want tokens after it: 1 when the op must arm, 0 when it must
// not (an arm nobody needs makes every parked consumer claim for nothing).
func (t *T) armedBy(q keys.Q, rule Rule, what string, want int64, op func()) {
	t.do("DEL", q.Wake())
	op()
	got := t.llen(q.Wake())
	expected := what + " arms the wake: exactly one token"
	if want == 0 {
		expected = what + " does not arm the wake: the emptied list stays empty"
	}
	t.check(got == want, rule, expected, "the wake list holds %d token(s)", got)
}

// Port ops the wake clauses run, each required to succeed under the rule being checked.

func (t *T) retryJob(rule Rule, q string, c *protocol.ClaimResult, maxAttempts, delay int64) string {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(q, c.ID, c.Token), MaxAttempts: maxAttempts, DelayMS: delay, Error: "boom"})
	t.ok(err, rule, "retry")
	return r.Outcome
}

func (t *T) reapQueue(rule Rule, q string, maxAttempts int64) int64 {
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: q, MaxAttempts: maxAttempts})
	t.ok(err, rule, "reap")
	return r.Count
}

func (t *T) promoteQueue(rule Rule, q string) int64 {
	r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: q})
	t.ok(err, rule, "promote")
	return r.Count
}

func (t *T) reviveJob(rule Rule, q, id string) bool {
	r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: q, ID: id})
	t.ok(err, rule, "revive")
	return r.Changed
}

func (t *T) ceiling(rule Rule, q, lane string, n int64) {
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: q, Lane: lane, Ceiling: n}), rule, fmt.Sprintf("lane_ceiling %s %d", lane, n))
}

// expire waits until c's lease has passed on the server's clock.
func (t *T) expire(q keys.Q, c *protocol.ClaimResult) {
	deadline, ok := t.zscore(q.Active(), c.ID)
	if !ok {
		t.harness("expire: %s is not in %s", c.ID, q.Active())
	}
	t.waitPast(deadline)
}

// wakeDuties are C14's clauses for A13: every op that must arm the wake, each from a state where
// it must, and from one where it must not.
func wakeDuties(s spec) {
	s.clause("enqueue-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		var id string
		t.armedBy(q, ruleWakeEnqueue, "an enqueue (delay 0: pending)", 1, func() { id = t.enqueue("orders", "a") })
		t.armedBy(q, ruleWakeEnqueue, "a delayed enqueue (delay 60 s: scheduled; canon §4 arms after both branches)", 1, func() {
			t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("b"), DelayMS: 60000})
		})
		t.armedBy(q, ruleWakeEnqueue, "a duplicate enqueue (the row exists: nothing changes)", 0, func() {
			r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("again")})
			t.ok(err, ruleWakeEnqueue, "enqueue of an existing id")
			t.check(!r.Created, ruleWakeEnqueue, "a duplicate answers created: false", "created: true")
		})
	})
	s.clause("lane-enqueue-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		var id string
		t.armedBy(q, ruleWakeLaneEnqueue, "a lane enqueue (delay 0)", 1, func() { id = t.laneEnqueue("orders", "east", "a") })
		t.armedBy(q, ruleWakeLaneEnqueue, "a delayed lane enqueue (delay 60 s)", 1, func() {
			t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: "west", PayloadB64: b64("b"), DelayMS: 60000})
		})
		for _, lane := range []string{"east", "north"} {
			t.armedBy(q, ruleWakeLaneEnqueue, "a duplicate lane enqueue in lane "+lane+" (the row exists)", 0, func() {
				r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", ID: id, Lane: lane, PayloadB64: b64("again")})
				t.ok(err, ruleWakeLaneEnqueue, "lane enqueue of an existing id")
				t.check(!r.Created, ruleWakeLaneEnqueue, "a duplicate answers created: false", "created: true")
			})
		}
	})
	s.clause("retry-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		t.enqueue("orders", "a")
		c := t.mustClaim("orders", 30000)
		t.armedBy(q, ruleWakeRetry, "a retry back to pending (delay 0)", 1, func() {
			t.check(t.retryJob(ruleWakeRetry, "orders", c, 5, 0) == "retried", ruleWakeRetry, "retried", "another outcome")
		})
		c = t.mustClaim("orders", 30000)
		t.armedBy(q, ruleWakeRetry, "a retry to scheduled (delay 60 s)", 1, func() {
			t.check(t.retryJob(ruleWakeRetry, "orders", c, 5, 60000) == "retried", ruleWakeRetry, "retried", "another outcome")
		})
		t.enqueue("orders", "b")
		c = t.mustClaim("orders", 30000)
		t.armedBy(q, ruleWakeRetry, "a retry at max_attempts (dead; no lane rejoins)", 0, func() {
			t.check(t.retryJob(ruleWakeRetry, "orders", c, 1, 0) == "dead", ruleWakeRetry, "dead at max_attempts 1", "another outcome")
		})
	})
	s.clause("reap-arms-when-it-moves", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		t.enqueue("orders", "a")
		c := t.mustClaim("orders", 150)
		t.armedBy(q, ruleWakeReap, "a reap before any lease passed (moves nothing)", 0, func() {
			t.check(t.reapQueue(ruleWakeReap, "orders", 5) == 0, ruleWakeReap, "reap count 0", "another count")
		})
		t.expire(q, c)
		t.armedBy(q, ruleWakeReap, "a reap returning an expired lease to pending", 1, func() {
			t.check(t.reapQueue(ruleWakeReap, "orders", 5) == 1, ruleWakeReap, "reap count 1", "another count")
		})
		t.armedBy(q, ruleWakeReap, "a second reap (nothing left to move)", 0, func() {
			t.check(t.reapQueue(ruleWakeReap, "orders", 5) == 0, ruleWakeReap, "reap count 0", "another count")
		})
	})
	s.clause("promote-arms-when-it-moves", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		a := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("a"), DelayMS: 120})
		t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: "east", PayloadB64: b64("b"), DelayMS: 120})
		t.armedBy(q, ruleWakePromote, "a promote before anything is due (moves nothing)", 0, func() {
			t.check(t.promoteQueue(ruleWakePromote, "orders") == 0, ruleWakePromote, "promote count 0", "another count")
		})
		due, _ := t.zscore(q.Scheduled(), a)
		t.waitPast(due + 1)
		t.armedBy(q, ruleWakePromote, "a promote moving a plain and a lane job", 1, func() {
			t.check(t.promoteQueue(ruleWakePromote, "orders") == 2, ruleWakePromote, "promote count 2", "another count")
		})
		t.armedBy(q, ruleWakePromote, "a second promote (nothing due)", 0, func() {
			t.check(t.promoteQueue(ruleWakePromote, "orders") == 0, ruleWakePromote, "promote count 0", "another count")
		})
	})
	s.clause("revive-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		a := t.enqueue("orders", "a")
		c := t.mustClaim("orders", 30000)
		t.retryJob(ruleWakeRevive, "orders", c, 1, 0)
		t.armedBy(q, ruleWakeRevive, "a revive of a dead plain job", 1, func() {
			t.check(t.reviveJob(ruleWakeRevive, "orders", a), ruleWakeRevive, "changed: true", "changed: false")
		})
		t.armedBy(q, ruleWakeRevive, "a revive of a job not in the morgue", 0, func() {
			t.check(!t.reviveJob(ruleWakeRevive, "orders", a), ruleWakeRevive, "changed: false", "changed: true")
		})
		b := t.laneEnqueue("orders", "east", "b")
		lc := t.laneClaim("orders", 30000)
		t.check(lc != nil && lc.ID == b, ruleWakeRevive, "the lane job claimed", "%+v", lc)
		t.armedBy(q, ruleWakeRejoin, "a fail emptying its lane (no lane rejoins)", 0, func() {
			t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", lc.ID, lc.Token), Error: "boom"}), ruleWakeRejoin, "fail")
		})
		t.armedBy(q, ruleWakeRevive, "a revive of a dead lane job (back to its lane)", 1, func() {
			t.check(t.reviveJob(ruleWakeRevive, "orders", b), ruleWakeRevive, "changed: true", "changed: false")
		})
	})
	s.clause("resume-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		pause := func() { t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleWakeResume, "pause") }
		resume := func() { t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleWakeResume, "resume") }
		pause()
		t.enqueue("orders", "a")
		t.armedBy(q, ruleWakeResume, "a resume with plain pending work", 1, resume)
		t.mustClaim("orders", 30000)
		pause()
		t.laneEnqueue("orders", "east", "b")
		t.armedBy(q, ruleWakeResume, "a resume with only a ring lane's work", 1, resume)
	})
	s.clause("lane-resume-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		qa := func(lane string) protocol.QueueArgs { return protocol.QueueArgs{Queue: "orders", Lane: lane} }
		t.laneEnqueue("orders", "east", "a")
		t.ok(t.D.LanePause(t.ctx, qa("east")), ruleWakeLaneResume, "lane_pause east")
		t.ok(t.D.LanePause(t.ctx, qa("west")), ruleWakeLaneResume, "lane_pause west")
		t.armedBy(q, ruleWakeLaneResume, "a lane_resume of a lane with work (it rejoins the ring)", 1, func() {
			t.ok(t.D.LaneResume(t.ctx, qa("east")), ruleWakeLaneResume, "lane_resume east")
		})
		t.armedBy(q, ruleWakeLaneResume, "a lane_resume of a lane without work (nothing rejoins)", 0, func() {
			t.ok(t.D.LaneResume(t.ctx, qa("west")), ruleWakeLaneResume, "lane_resume west")
		})
	})
	s.clause("lane-ceiling-reopening-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		t.laneEnqueue("orders", "east", "a")
		t.laneEnqueue("orders", "east", "b")
		t.ceiling(ruleWakeLaneCeiling, "orders", "east", 1)
		t.check(t.laneClaim("orders", 30000) != nil, ruleWakeLaneCeiling, "a lane job claimed under ceiling 1", "an empty reply")
		t.armedBy(q, ruleWakeLaneCeiling, "lane_ceiling 1 again (the lane stays at its ceiling)", 0, func() { t.ceiling(ruleWakeLaneCeiling, "orders", "east", 1) })
		t.armedBy(q, ruleWakeLaneCeiling, "a raise to ceiling 2 (the lane reopens)", 1, func() { t.ceiling(ruleWakeLaneCeiling, "orders", "east", 2) })
		t.armedBy(q, ruleWakeLaneCeiling, "a lowering to ceiling 1 (the lane closes)", 0, func() { t.ceiling(ruleWakeLaneCeiling, "orders", "east", 1) })
		t.armedBy(q, ruleWakeLaneCeiling, "removing the ceiling (lane_ceiling 0: the lane reopens)", 1, func() { t.ceiling(ruleWakeLaneCeiling, "orders", "east", 0) })
	})
	s.clause("settle-reopening-a-lane-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		for i := range 5 {
			t.laneEnqueue("orders", "east", fmt.Sprint(i))
		}
		t.ceiling(ruleWakeRejoin, "orders", "east", 1)
		claim := func(lease int64) *protocol.ClaimResult {
			c := t.laneClaim("orders", lease)
			t.check(c != nil, ruleWakeRejoin, "the lane's next job, claimed under ceiling 1", "an empty reply")
			return c
		}
		c := claim(30000)
		t.armedBy(q, ruleWakeRejoin, "a complete bringing the lane below its ceiling", 1, func() { t.complete("orders", c.ID, c.Token) })
		c = claim(30000)
		t.armedBy(q, ruleWakeRejoin, "a fail bringing the lane below its ceiling", 1, func() {
			t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", c.ID, c.Token), Error: "boom"}), ruleWakeRejoin, "fail")
		})
		c = claim(30000)
		t.armedBy(q, ruleWakeRejoin, "a retry to the morgue bringing the lane below its ceiling", 1, func() {
			t.check(t.retryJob(ruleWakeRejoin, "orders", c, 1, 0) == "dead", ruleWakeRejoin, "dead at max_attempts 1", "another outcome")
		})
		c = claim(150)
		t.expire(q, c)
		t.armedBy(q, ruleWakeRejoin, "a reap to the morgue bringing the lane below its ceiling", 1, func() {
			t.check(t.reapQueue(ruleWakeRejoin, "orders", 1) == 1, ruleWakeRejoin, "reap count 1", "another count")
		})
		c = claim(30000)
		t.armedBy(q, ruleWakeRejoin, "a complete of the lane's last job (nothing rejoins)", 0, func() { t.complete("orders", c.ID, c.Token) })
	})
	s.clause("claims-rearm-for-pending-and-ring", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		claimed := func(c *protocol.ClaimResult, rule Rule) {
			t.check(c != nil, rule, "a job", "an empty reply")
		}
		t.enqueue("orders", "p1")
		t.laneEnqueue("orders", "east", "l1")
		t.armedBy(q, ruleWakeClaimRearm, "a claim taking the last plain job while a ring lane remains", 1, func() { t.mustClaim("orders", 30000) })
		t.armedBy(q, ruleWakeLaneRearm, "a lane_claim taking the last job of the last lane (nothing remains)", 0, func() { claimed(t.laneClaim("orders", 30000), ruleWakeLaneRearm) })
		t.enqueue("orders", "p2")
		t.laneEnqueue("orders", "east", "l2")
		t.armedBy(q, ruleWakeLaneRearm, "a lane_claim emptying the ring while a plain pending job remains", 1, func() { claimed(t.laneClaim("orders", 30000), ruleWakeLaneRearm) })
		t.armedBy(q, ruleWakeClaimRearm, "a claim taking the last job (nothing remains)", 0, func() { t.mustClaim("orders", 30000) })
		t.laneEnqueue("orders", "east", "l3")
		t.laneEnqueue("orders", "east", "l4")
		t.armedBy(q, ruleWakeLaneRearm, "a lane_claim leaving its lane in the ring", 1, func() { claimed(t.laneClaim("orders", 30000), ruleWakeLaneRearm) })
		t.armedBy(q, ruleWakeLaneRearm, "a lane_claim taking the last lane job", 0, func() { claimed(t.laneClaim("orders", 30000), ruleWakeLaneRearm) })
	})
	s.clause("empty-claim-never-arms", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		empty := func(op string, c *protocol.ClaimResult) {
			t.check(c == nil, ruleWakeEmptyClaim, op+" answers empty", "%+v", c)
		}
		t.armedBy(q, ruleWakeEmptyClaim, "a claim on an empty queue", 0, func() { empty("claim", t.claim("orders", 30000)) })
		t.armedBy(q, ruleWakeEmptyClaim, "a lane_claim on an empty queue", 0, func() { empty("lane_claim", t.laneClaim("orders", 30000)) })
		t.enqueue("orders", "a")
		t.laneEnqueue("orders", "east", "b")
		t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleWakeEmptyClaim, "pause")
		t.armedBy(q, ruleWakeEmptyClaim, "a claim on a paused queue with work", 0, func() { empty("claim", t.claim("orders", 30000)) })
		t.armedBy(q, ruleWakeEmptyClaim, "a lane_claim on a paused queue with work", 0, func() { empty("lane_claim", t.laneClaim("orders", 30000)) })
	})
	s.clause("every-arming-op-keeps-one-token", clauseOpts{}, func(t *T) {
		q := t.q("orders")
		one := func(step string) {
			t.check(t.llen(q.Wake()) == 1, ruleWakeOne, "after "+step+" the wake list holds exactly one token (nothing pops it)", "length %d", t.llen(q.Wake()))
		}
		t.enqueue("orders", "a")
		one("an enqueue")
		t.enqueue("orders", "b")
		one("a second enqueue")
		t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("c"), DelayMS: 60000})
		one("a delayed enqueue")
		t.laneEnqueue("orders", "east", "d")
		one("a lane enqueue")
		t.laneEnqueue("orders", "east", "e")
		one("a second lane enqueue")
		c := t.mustClaim("orders", 30000)
		one("a claim with work remaining")
		t.retryJob(ruleWakeOne, "orders", c, 5, 0)
		one("a retry")
		c = t.mustClaim("orders", 30000)
		t.retryJob(ruleWakeOne, "orders", c, 1, 0)
		one("a retry to the morgue")
		t.reviveJob(ruleWakeOne, "orders", c.ID)
		one("a revive")
		t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleWakeOne, "pause")
		t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleWakeOne, "resume")
		one("a pause and a resume")
		t.ceiling(ruleWakeOne, "orders", "east", 1)
		lc := t.laneClaim("orders", 30000)
		t.check(lc != nil, ruleWakeOne, "a lane job", "an empty reply")
		one("a lane_claim")
		t.ceiling(ruleWakeOne, "orders", "east", 0)
		one("a lane_ceiling reopening the lane")
		t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), ruleWakeOne, "lane_pause")
		t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east"}), ruleWakeOne, "lane_resume")
		one("a lane_pause and a lane_resume")
		t.complete("orders", lc.ID, lc.Token)
		one("a complete")
	})
}
