package contracts

import (
	"fmt"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/keys"
)

// armedBy empties the wake list from the harness's own connection, runs op from the port and
// requires the list to hold exactly want tokens after it: 1 when the op must arm, 0 when it must
// not (an arm nobody needs makes every parked consumer claim for nothing).
func (t *T) armedBy(q keys.Q, rule rules.Rule, what string, want int64, op func()) {
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

func (t *T) retryJob(rule rules.Rule, q string, c *protocol.ClaimResult, maxAttempts, delay int64) string {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(q, c.ID, c.Token), MaxAttempts: maxAttempts, DelayMS: delay, Error: "boom"})
	t.ok(err, rule, "retry")
	return r.Outcome
}

func (t *T) reapQueue(rule rules.Rule, q string, maxAttempts int64) int64 {
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: q, MaxAttempts: maxAttempts})
	t.ok(err, rule, "reap")
	return r.Count
}

func (t *T) promoteQueue(rule rules.Rule, q string) int64 {
	r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: q})
	t.ok(err, rule, "promote")
	return r.Count
}

func (t *T) reviveJob(rule rules.Rule, q, id string) bool {
	r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: q, ID: id})
	t.ok(err, rule, "revive")
	return r.Changed
}

func (t *T) ceiling(rule rules.Rule, q, lane string, n int64) {
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

// wakeEnqueue: enqueue arms, delayed or not (canon §4 arms after both branches); a duplicate does not.
func (t *T) wakeEnqueue(qn string) {
	q := t.q(qn)
	var id string
	t.armedBy(q, rules.WakeEnqueue, "an enqueue (delay 0: pending)", 1, func() { id = t.enqueue(qn, "a") })
	t.armedBy(q, rules.WakeEnqueue, "a delayed enqueue (delay 60 s: scheduled; canon §4 arms after both branches)", 1, func() {
		t.enqueueWith(protocol.EnqueueArgs{Queue: qn, PayloadB64: b64("b"), DelayMS: 60000})
	})
	t.armedBy(q, rules.WakeEnqueue, "a duplicate enqueue (the row exists: nothing changes)", 0, func() {
		r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: qn, ID: id, PayloadB64: b64("again")})
		t.ok(err, rules.WakeEnqueue, "enqueue of an existing id")
		t.check(!r.Created, rules.WakeEnqueue, "a duplicate answers created: false", "created: true")
	})
}

// wakeLaneEnqueue: lane_enqueue arms, delayed or not; a duplicate id, same lane or another, does not.
func (t *T) wakeLaneEnqueue(qn string) {
	q := t.q(qn)
	var id string
	t.armedBy(q, rules.WakeLaneEnqueue, "a lane enqueue (delay 0)", 1, func() { id = t.laneEnqueue(qn, "east", "a") })
	t.armedBy(q, rules.WakeLaneEnqueue, "a delayed lane enqueue (delay 60 s)", 1, func() {
		t.enqueueWith(protocol.EnqueueArgs{Queue: qn, Lane: "west", PayloadB64: b64("b"), DelayMS: 60000})
	})
	for _, lane := range []string{"east", "north"} {
		t.armedBy(q, rules.WakeLaneEnqueue, "a duplicate lane enqueue in lane "+lane+" (the row exists)", 0, func() {
			r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: qn, ID: id, Lane: lane, PayloadB64: b64("again")})
			t.ok(err, rules.WakeLaneEnqueue, "lane enqueue of an existing id")
			t.check(!r.Created, rules.WakeLaneEnqueue, "a duplicate answers created: false", "created: true")
		})
	}
}

// wakeEnqueueBatch: for a port declaring the batch ops (A17), enqueue_batch arms once when any
// job was new, delayed or not, and a batch of duplicates only (ids already there, or repeated in
// the batch) changes nothing, the wake included (B-247), as a duplicate enqueue does not arm.
func (t *T) wakeEnqueueBatch(qn string) {
	if !t.hasCap(protocol.CapBatch) {
		return
	}
	b := t.batcher()
	q := t.q(qn)
	var ids []string
	t.armedBy(q, rules.BatchEnqueue, "an enqueue_batch of a pending and a delayed job (60 s)", 1, func() {
		r, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: qn, Jobs: []protocol.BatchJob{
			{PayloadB64: b64("a")}, {PayloadB64: b64("b"), DelayMS: 60000},
		}})
		t.ok(err, rules.BatchEnqueue, "enqueue_batch of two new jobs")
		t.check(len(r.Jobs) == 2 && r.Jobs[0].Created && r.Jobs[1].Created, rules.BatchEnqueue, "both jobs created", "%+v", r.Jobs)
		for _, j := range r.Jobs {
			ids = append(ids, j.ID)
		}
	})
	t.armedBy(q, rules.BatchEnqueue, "an enqueue_batch of duplicates only (both ids already there, one repeated in the batch)", 0, func() {
		r, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: qn, Jobs: []protocol.BatchJob{
			{ID: ids[0], PayloadB64: b64("again")}, {ID: ids[1], PayloadB64: b64("again"), DelayMS: 5000}, {ID: ids[0], PayloadB64: b64("again")},
		}})
		t.ok(err, rules.BatchEnqueue, "enqueue_batch of existing ids")
		t.check(len(r.Jobs) == 3 && !r.Jobs[0].Created && !r.Jobs[1].Created && !r.Jobs[2].Created, rules.BatchEnqueue,
			"every duplicate answers created: false", "%+v", r.Jobs)
	})
}

// wakeRetry: retry arms when it retries (delay 0 or later), not when the job dies with no lane to reopen.
func (t *T) wakeRetry(qn string) {
	q := t.q(qn)
	t.enqueue(qn, "a")
	c := t.mustClaim(qn, workLease)
	t.armedBy(q, rules.WakeRetry, "a retry back to pending (delay 0)", 1, func() {
		t.check(t.retryJob(rules.WakeRetry, qn, c, 5, 0) == "retried", rules.WakeRetry, "retried", "another outcome")
	})
	c = t.mustClaim(qn, workLease)
	t.armedBy(q, rules.WakeRetry, "a retry to scheduled (delay 60 s)", 1, func() {
		t.check(t.retryJob(rules.WakeRetry, qn, c, 5, 60000) == "retried", rules.WakeRetry, "retried", "another outcome")
	})
	t.enqueue(qn, "b")
	c = t.mustClaim(qn, workLease)
	t.armedBy(q, rules.WakeRetry, "a retry at max_attempts (dead; no lane rejoins)", 0, func() {
		t.check(t.retryJob(rules.WakeRetry, qn, c, 1, 0) == "dead", rules.WakeRetry, "dead at max_attempts 1", "another outcome")
	})
}

// wakeReap: reap arms when it returned a lease, not when it moved nothing or only buried one.
func (t *T) wakeReap(qn string) {
	q := t.q(qn)
	t.enqueue(qn, "live")
	t.enqueue(qn, "short")
	t.mustClaim(qn, workLease) // a live lease: a reap must leave it, and that moves nothing
	t.armedBy(q, rules.WakeReap, "a reap finding only a live lease (moves nothing)", 0, func() {
		t.check(t.reapQueue(rules.WakeReap, qn, 5) == 0, rules.WakeReap, "reap count 0", "another count")
	})
	c := t.mustClaim(qn, 100)
	t.expire(q, c)
	t.armedBy(q, rules.WakeReap, "a reap returning an expired lease to pending", 1, func() {
		t.check(t.reapQueue(rules.WakeReap, qn, 5) == 1, rules.WakeReap, "reap count 1", "another count")
	})
	t.armedBy(q, rules.WakeReap, "a second reap (only the live lease left)", 0, func() {
		t.check(t.reapQueue(rules.WakeReap, qn, 5) == 0, rules.WakeReap, "reap count 0", "another count")
	})
	c = t.mustClaim(qn, 100) // the returned job, again
	t.expire(q, c)
	t.armedBy(q, rules.WakeReap, "a reap that only buries an expired lease at max_attempts 1 in the morgue (nothing a claim takes)", 0, func() {
		t.check(t.reapQueue(rules.WakeReap, qn, 1) == 1, rules.WakeReap, "reap count 1", "another count")
	})
}

// wakePromote: promote arms when it moved a due job (plain or lane), not when nothing was due.
func (t *T) wakePromote(qn string) {
	q := t.q(qn)
	t.enqueueWith(protocol.EnqueueArgs{Queue: qn, PayloadB64: b64("later"), DelayMS: 60000})
	t.armedBy(q, rules.WakePromote, "a promote with nothing due (moves nothing)", 0, func() {
		t.check(t.promoteQueue(rules.WakePromote, qn) == 0, rules.WakePromote, "promote count 0", "another count")
	})
	a := t.enqueueWith(protocol.EnqueueArgs{Queue: qn, PayloadB64: b64("a"), DelayMS: 100})
	b := t.enqueueWith(protocol.EnqueueArgs{Queue: qn, Lane: "east", PayloadB64: b64("b"), DelayMS: 100})
	da, _ := t.zscore(q.Scheduled(), a)
	db, _ := t.zscore(q.Scheduled(), b)
	t.waitPast(max(da, db) + 1)
	t.armedBy(q, rules.WakePromote, "a promote moving a plain and a lane job", 1, func() {
		t.check(t.promoteQueue(rules.WakePromote, qn) == 2, rules.WakePromote, "promote count 2", "another count")
	})
	t.armedBy(q, rules.WakePromote, "a second promote (nothing due)", 0, func() {
		t.check(t.promoteQueue(rules.WakePromote, qn) == 0, rules.WakePromote, "promote count 0", "another count")
	})
}

// wakeRevive: revive arms (plain and lane job), a revive of a live id does not; a fail emptying its lane does not.
func (t *T) wakeRevive(qn string) {
	q := t.q(qn)
	a := t.enqueue(qn, "a")
	c := t.mustClaim(qn, workLease)
	t.retryJob(rules.WakeRevive, qn, c, 1, 0)
	t.armedBy(q, rules.WakeRevive, "a revive of a dead plain job", 1, func() {
		t.check(t.reviveJob(rules.WakeRevive, qn, a), rules.WakeRevive, "changed: true", "changed: false")
	})
	t.armedBy(q, rules.WakeRevive, "a revive of a job not in the morgue", 0, func() {
		t.check(!t.reviveJob(rules.WakeRevive, qn, a), rules.WakeRevive, "changed: false", "changed: true")
	})
	b := t.laneEnqueue(qn, "east", "b")
	lc := t.laneClaim(qn, workLease)
	t.check(lc != nil && lc.ID == b, rules.WakeRevive, "the lane job claimed", "%+v", lc)
	t.armedBy(q, rules.WakeRejoin, "a fail emptying its lane (no lane rejoins)", 0, func() {
		t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa(qn, lc.ID, lc.Token), Error: "boom"}), rules.WakeRejoin, "fail")
	})
	t.armedBy(q, rules.WakeRevive, "a revive of a dead lane job (back to its lane)", 1, func() {
		t.check(t.reviveJob(rules.WakeRevive, qn, b), rules.WakeRevive, "changed: true", "changed: false")
	})
}

// wakeResume: resume arms while plain pending ids or ring lanes wait behind the pause.
func (t *T) wakeResume(qn string) {
	q := t.q(qn)
	pause := func() { t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: qn}), rules.WakeResume, "pause") }
	resume := func() { t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: qn}), rules.WakeResume, "resume") }
	pause()
	t.enqueue(qn, "a")
	t.armedBy(q, rules.WakeResume, "a resume with plain pending work", 1, resume)
	t.mustClaim(qn, workLease)
	pause()
	t.laneEnqueue(qn, "east", "b")
	t.armedBy(q, rules.WakeResume, "a resume with only a ring lane's work", 1, resume)
}

// wakeLaneResume: lane_resume arms when the lane rejoins the ring, not for a lane without work.
func (t *T) wakeLaneResume(qn string) {
	q := t.q(qn)
	qa := func(lane string) protocol.QueueArgs { return protocol.QueueArgs{Queue: qn, Lane: lane} }
	t.laneEnqueue(qn, "east", "a")
	t.ok(t.D.LanePause(t.ctx, qa("east")), rules.WakeLaneResume, "lane_pause east")
	t.ok(t.D.LanePause(t.ctx, qa("west")), rules.WakeLaneResume, "lane_pause west")
	t.armedBy(q, rules.WakeLaneResume, "a lane_resume of a lane with work (it rejoins the ring)", 1, func() {
		t.ok(t.D.LaneResume(t.ctx, qa("east")), rules.WakeLaneResume, "lane_resume east")
	})
	t.armedBy(q, rules.WakeLaneResume, "a lane_resume of a lane without work (nothing rejoins)", 0, func() {
		t.ok(t.D.LaneResume(t.ctx, qa("west")), rules.WakeLaneResume, "lane_resume west")
	})
}

// wakeLaneCeiling: lane_ceiling arms when a raise or a removal reopens the lane, not when it stays or closes.
func (t *T) wakeLaneCeiling(qn string) {
	q := t.q(qn)
	t.laneEnqueue(qn, "east", "a")
	t.laneEnqueue(qn, "east", "b")
	t.ceiling(rules.WakeLaneCeiling, qn, "east", 1)
	t.check(t.laneClaim(qn, workLease) != nil, rules.WakeLaneCeiling, "a lane job claimed under ceiling 1", "an empty reply")
	t.armedBy(q, rules.WakeLaneCeiling, "lane_ceiling 1 again (the lane stays at its ceiling)", 0, func() { t.ceiling(rules.WakeLaneCeiling, qn, "east", 1) })
	t.armedBy(q, rules.WakeLaneCeiling, "a raise to ceiling 2 (the lane reopens)", 1, func() { t.ceiling(rules.WakeLaneCeiling, qn, "east", 2) })
	t.armedBy(q, rules.WakeLaneCeiling, "a lowering to ceiling 1 (the lane closes)", 0, func() { t.ceiling(rules.WakeLaneCeiling, qn, "east", 1) })
	t.armedBy(q, rules.WakeLaneCeiling, "removing the ceiling (lane_ceiling 0: the lane reopens)", 1, func() { t.ceiling(rules.WakeLaneCeiling, qn, "east", 0) })
}

// wakeRejoin: complete, fail, retry→dead and reap→dead arm when they bring a lane below its ceiling (it rejoins); a complete that empties the lane does not.
func (t *T) wakeRejoin(qn string) {
	q := t.q(qn)
	batch := t.hasCap(protocol.CapBatch) // complete_batch settles like complete (A17-1): one job more
	jobs := 5
	if batch {
		jobs++
	}
	for i := range jobs {
		t.laneEnqueue(qn, "east", fmt.Sprint(i))
	}
	t.ceiling(rules.WakeRejoin, qn, "east", 1)
	claim := func(lease int64) *protocol.ClaimResult {
		c := t.laneClaim(qn, lease)
		t.check(c != nil, rules.WakeRejoin, "the lane's next job, claimed under ceiling 1", "an empty reply")
		return c
	}
	c := claim(workLease)
	t.armedBy(q, rules.WakeRejoin, "a complete bringing the lane below its ceiling", 1, func() { t.complete(qn, c.ID, c.Token) })
	c = claim(workLease)
	t.armedBy(q, rules.WakeRejoin, "a fail bringing the lane below its ceiling", 1, func() {
		t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa(qn, c.ID, c.Token), Error: "boom"}), rules.WakeRejoin, "fail")
	})
	c = claim(workLease)
	t.armedBy(q, rules.WakeRejoin, "a retry to the morgue bringing the lane below its ceiling", 1, func() {
		t.check(t.retryJob(rules.WakeRejoin, qn, c, 1, 0) == "dead", rules.WakeRejoin, "dead at max_attempts 1", "another outcome")
	})
	c = claim(150)
	t.expire(q, c)
	t.armedBy(q, rules.WakeRejoin, "a reap to the morgue bringing the lane below its ceiling", 1, func() {
		t.check(t.reapQueue(rules.WakeRejoin, qn, 1) == 1, rules.WakeRejoin, "reap count 1", "another count")
	})
	if batch {
		c = claim(workLease)
		t.armedBy(q, rules.WakeRejoin, "a complete_batch bringing the lane below its ceiling", 1, func() {
			r, err := t.batcher().CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: qn, Jobs: []protocol.Pair{{ID: c.ID, Token: c.Token}}})
			t.ok(err, rules.WakeRejoin, "complete_batch")
			t.check(len(r.Results) == 1 && r.Results[0].OK, rules.WakeRejoin, "the pair settles", "%v", r.Results)
		})
	}
	c = claim(workLease)
	t.armedBy(q, rules.WakeRejoin, "a complete of the lane's last job (nothing rejoins)", 0, func() { t.complete(qn, c.ID, c.Token) })
}

// wakeClaimsRearm: both claims re-arm while plain pending ids or ring lanes remain, and not on the last job.
func (t *T) wakeClaimsRearm(qn string) {
	q := t.q(qn)
	claimed := func(c *protocol.ClaimResult, rule rules.Rule) {
		t.check(c != nil, rule, "a job", "an empty reply")
	}
	t.enqueue(qn, "p1")
	t.laneEnqueue(qn, "east", "l1")
	t.armedBy(q, rules.WakeClaimRearm, "a claim taking the last plain job while a ring lane remains", 1, func() { t.mustClaim(qn, workLease) })
	t.armedBy(q, rules.WakeLaneRearm, "a lane_claim taking the last job of the last lane (nothing remains)", 0, func() { claimed(t.laneClaim(qn, workLease), rules.WakeLaneRearm) })
	t.enqueue(qn, "p2")
	t.laneEnqueue(qn, "east", "l2")
	t.armedBy(q, rules.WakeLaneRearm, "a lane_claim emptying the ring while a plain pending job remains", 1, func() { claimed(t.laneClaim(qn, workLease), rules.WakeLaneRearm) })
	t.armedBy(q, rules.WakeClaimRearm, "a claim taking the last job (nothing remains)", 0, func() { t.mustClaim(qn, workLease) })
	t.laneEnqueue(qn, "east", "l3")
	t.laneEnqueue(qn, "east", "l4")
	t.armedBy(q, rules.WakeLaneRearm, "a lane_claim leaving its lane in the ring", 1, func() { claimed(t.laneClaim(qn, workLease), rules.WakeLaneRearm) })
	t.armedBy(q, rules.WakeLaneRearm, "a lane_claim taking the last lane job", 0, func() { claimed(t.laneClaim(qn, workLease), rules.WakeLaneRearm) })
}

// wakeEmptyClaim: an empty claim never arms: empty queue, or paused with work (else parked consumers spin).
func (t *T) wakeEmptyClaim(qn string) {
	q := t.q(qn)
	empty := func(op string, c *protocol.ClaimResult) {
		t.check(c == nil, rules.WakeEmptyClaim, op+" answers empty", "%+v", c)
	}
	t.armedBy(q, rules.WakeEmptyClaim, "a claim on an empty queue", 0, func() { empty("claim", t.claim(qn, workLease)) })
	t.armedBy(q, rules.WakeEmptyClaim, "a lane_claim on an empty queue", 0, func() { empty("lane_claim", t.laneClaim(qn, workLease)) })
	t.enqueue(qn, "a")
	t.laneEnqueue(qn, "east", "b")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: qn}), rules.WakeEmptyClaim, "pause")
	t.armedBy(q, rules.WakeEmptyClaim, "a claim on a paused queue with work", 0, func() { empty("claim", t.claim(qn, workLease)) })
	t.armedBy(q, rules.WakeEmptyClaim, "a lane_claim on a paused queue with work", 0, func() { empty("lane_claim", t.laneClaim(qn, workLease)) })
}

// wakeKeepsOne: with nobody popping, every arming op leaves exactly one token (A10).
func (t *T) wakeKeepsOne(qn string) {
	q := t.q(qn)
	one := func(step string) {
		t.check(t.llen(q.Wake()) == 1, rules.WakeOne, "after "+step+" the wake list holds exactly one token (nothing pops it)", "length %d", t.llen(q.Wake()))
	}
	t.enqueue(qn, "a")
	one("an enqueue")
	t.enqueue(qn, "b")
	one("a second enqueue")
	t.enqueueWith(protocol.EnqueueArgs{Queue: qn, PayloadB64: b64("c"), DelayMS: 60000})
	one("a delayed enqueue")
	t.laneEnqueue(qn, "east", "d")
	one("a lane enqueue")
	t.laneEnqueue(qn, "east", "e")
	one("a second lane enqueue")
	c := t.mustClaim(qn, workLease)
	one("a claim with work remaining")
	t.retryJob(rules.WakeOne, qn, c, 5, 0)
	one("a retry")
	c = t.mustClaim(qn, workLease)
	t.retryJob(rules.WakeOne, qn, c, 1, 0)
	one("a retry to the morgue")
	t.reviveJob(rules.WakeOne, qn, c.ID)
	one("a revive")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: qn}), rules.WakeOne, "pause")
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: qn}), rules.WakeOne, "resume")
	one("a pause and a resume")
	t.ceiling(rules.WakeOne, qn, "east", 1)
	lc := t.laneClaim(qn, workLease)
	t.check(lc != nil, rules.WakeOne, "a lane job", "an empty reply")
	one("a lane_claim")
	t.ceiling(rules.WakeOne, qn, "east", 0)
	one("a lane_ceiling reopening the lane")
	t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: qn, Lane: "east"}), rules.WakeOne, "lane_pause")
	t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: qn, Lane: "east"}), rules.WakeOne, "lane_resume")
	one("a lane_pause and a lane_resume")
	t.complete(qn, lc.ID, lc.Token)
	one("a complete")
	d := t.enqueueWith(protocol.EnqueueArgs{Queue: qn, Lane: "west", PayloadB64: b64("f"), DelayMS: 50})
	one("a delayed lane enqueue")
	due, _ := t.zscore(q.Scheduled(), d)
	c = t.mustClaim(qn, 50)
	t.expire(q, c)
	t.waitPast(due + 1)
	t.check(t.promoteQueue(rules.WakeOne, qn) == 1, rules.WakeOne, "promote count 1", "another count")
	one("a promote")
	t.check(t.reapQueue(rules.WakeOne, qn, 5) == 1, rules.WakeOne, "reap count 1", "another count")
	one("a reap")
}

// wakeKeepsOneBatch: the batch ops (A17, for a port declaring them) arm as their single-job ops
// do, so with nobody popping each leaves exactly one token too (A10): enqueue_batch, claim_batch
// with work remaining, and complete_batch bringing a lane below its ceiling.
func (t *T) wakeKeepsOneBatch(qn string) {
	if !t.hasCap(protocol.CapBatch) {
		return
	}
	b := t.batcher()
	q := t.q(qn)
	one := func(step string) {
		t.check(t.llen(q.Wake()) == 1, rules.WakeOne, "after "+step+" the wake list holds exactly one token (nothing pops it)", "length %d", t.llen(q.Wake()))
	}
	enqueue := func(step string) {
		r, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: qn, Jobs: []protocol.BatchJob{
			{PayloadB64: b64(step)}, {PayloadB64: b64(step + " later"), DelayMS: 60000},
		}})
		t.ok(err, rules.WakeOne, "enqueue_batch")
		t.check(len(r.Jobs) == 2 && r.Jobs[0].Created && r.Jobs[1].Created, rules.WakeOne, "both jobs created", "%+v", r.Jobs)
		one("an enqueue_batch (" + step + ")")
	}
	enqueue("first")
	enqueue("second")
	c, err := b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: qn, LeaseMS: workLease, N: 1})
	t.ok(err, rules.WakeOne, "claim_batch")
	t.check(len(c.Jobs) == 1, rules.WakeOne, "claim_batch of 1 with two pending claims one", "%d jobs", len(c.Jobs))
	one("a claim_batch with work remaining")
	t.laneEnqueue(qn, "east", "l1")
	t.laneEnqueue(qn, "east", "l2")
	t.ceiling(rules.WakeOne, qn, "east", 1)
	lc := t.laneClaim(qn, workLease)
	t.check(lc != nil, rules.WakeOne, "a lane job claimed under ceiling 1", "an empty reply")
	one("a lane_claim bringing its lane to its ceiling")
	pairs := []protocol.Pair{{ID: lc.ID, Token: lc.Token}, {ID: c.Jobs[0].ID, Token: c.Jobs[0].Token}}
	r, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: qn, Jobs: pairs})
	t.ok(err, rules.WakeOne, "complete_batch")
	t.check(len(r.Results) == 2 && r.Results[0].OK && r.Results[1].OK, rules.WakeOne, "both pairs settle", "%+v", r.Results)
	one("a complete_batch bringing the lane below its ceiling")
}

// wakeDutyClauses are C14's clauses for A13: every op that must arm the wake, each from a state where
// it must and from one where it must not. The duties are grouped in a few clauses (each on its
// own queue) to keep a port's certification short: every clause starts a fresh port.
var wakeDutyClauses = []clause{
	{name: "enqueues-arm", body: enqueuesArm},
	{name: "settles-and-movers-arm", body: settlesAndMoversArm},
	{name: "resumes-and-reopened-lanes-arm", body: resumesAndReopenedLanesArm},
	{name: "claims-rearm-only-while-work-remains", body: claimsRearmOnlyWhileWorkRemains},
}

func enqueuesArm(t *T) {
	t.wakeEnqueue("enq")
	t.wakeLaneEnqueue("lenq")
	t.wakeEnqueueBatch("benq")
}

func settlesAndMoversArm(t *T) {
	t.wakeRetry("retry")
	t.wakeReap("reap")
	t.wakePromote("promote")
	t.wakeRevive("revive")
}

func resumesAndReopenedLanesArm(t *T) {
	t.wakeResume("resume")
	t.wakeLaneResume("lresume")
	t.wakeLaneCeiling("ceiling")
	t.wakeRejoin("rejoin")
}

func claimsRearmOnlyWhileWorkRemains(t *T) {
	t.wakeClaimsRearm("claims")
	t.wakeEmptyClaim("empty")
}
