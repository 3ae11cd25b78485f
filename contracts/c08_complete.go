package contracts

import (
	"fmt"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// c08 is contract C08: complete.
var c08 = Contract{ID: "C08", Name: "complete",
	Rule: "the right token retires the job everywhere: no row, no set membership, no error, no checkpoint, no lane count left",
	clauses: []clause{
		fieldsClause(fieldGroup{[]string{"complete_batch"}, ownField}),
		{name: "complete-batch-retires", body: completeBatchPairsFenced},
		{name: "retires-everywhere", body: retiresEverywhere},
		{name: "lane-job-retires-lane-count", body: laneJobRetiresLaneCount},
		{name: "second-complete-is-stale", body: secondCompleteIsStale},
		{name: "complete-removes-exactly-its-own", body: completeRemovesExactlyItsOwn},
		{name: "complete-keeps-paused-lane-out", body: completeKeepsPausedLaneOut},
	},
}

func retiresEverywhere(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "x")
	c1 := t.mustClaim("orders", workLease)
	_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c1.Token), MaxAttempts: 5, Error: "first try failed"})
	t.ok(err, rules.Retry, "retry")
	c2 := t.mustClaim("orders", workLease)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c2.Token), DataB64: b64("progress")}), rules.Checkpoint, "checkpoint")
	_, hasErr := t.hget(q.Errors(), id)
	_, hasCk := t.hget(q.Ckpt(), id)
	t.check(hasErr && hasCk, rules.Checkpoint, "a last error and a checkpoint before the complete", "error %v checkpoint %v", hasErr, hasCk)
	t.complete("orders", id, c2.Token)
	gone(t, "orders", id)
	t.cover(rules.Complete)
	for _, k := range t.allKeys() {
		if strings.HasPrefix(k, q.Prefix()) && k != q.Wake() {
			t.fail(rules.Complete, "nothing of the queue left but its wake", "left behind: "+k)
		}
	}
}

func laneJobRetiresLaneCount(t *T) {
	q := t.q("orders")
	id := t.laneEnqueue("orders", "east", "x")
	c := t.laneClaim("orders", workLease)
	t.check(c != nil && c.ID == id && c.Lane == "east", rules.Lanes, "lane_claim returns the lane's job", "%+v", c)
	n, _ := t.hget(q.Lanes(), "active:east")
	t.check(n == "1", rules.Lanes, "lanes active:east = 1 while claimed", "%q", n)
	t.complete("orders", id, c.Token)
	gone(t, "orders", id)
	n, ok := t.hget(q.Lanes(), "active:east")
	t.check(!ok || n == "0", rules.Complete, "no lane count left (active:east absent or 0)", "active:east = %q", n)
	members, _ := t.zset(laneKey(q, "east"))
	t.check(len(members) == 0, rules.Complete, "the lane holds nothing", "%v", members)
}

func secondCompleteIsStale(t *T) {
	id := t.enqueue("orders", "x")
	c := t.mustClaim("orders", workLease)
	t.complete("orders", id, c.Token)
	before := t.snapshot()
	t.refused(t.D.Complete(t.ctx, fa("orders", id, c.Token)), emqerr.Stale, rules.Fenced, "a second complete of a retired job")
	d := diff(before, t.snapshot())
	t.check(d == "", rules.Fenced, "the refused complete changes nothing", "%s", d)
}

// Lane and plain jobs with a last error and a checkpoint, a lane at its ceiling, other
// jobs' leases around them: each complete removes exactly what its job owned, and at the
// end only what the remaining job owns is left.
func completeRemovesExactlyItsOwn(t *T) {
	q := t.q("orders")
	a := t.laneEnqueue("orders", "east", "a")
	b := t.laneEnqueue("orders", "east", "b")
	c := t.laneEnqueue("orders", "west", "c")
	c2 := t.laneEnqueue("orders", "west", "c2")
	p := t.enqueue("orders", "p")
	ca := t.laneClaim("orders", workLease)
	t.check(ca != nil && ca.ID == a, rules.Lanes, "lane_claim takes east's oldest job", "%+v", ca)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", a, ca.Token), DataB64: b64("step 1")}), rules.Checkpoint, "checkpoint")
	t.retried("orders", a, ca.Token, 0)
	cc := t.laneClaim("orders", workLease)
	t.check(cc != nil && cc.ID == c, rules.Lanes, "lane_claim rotates to west", "%+v", cc)
	ca = t.laneClaim("orders", workLease)
	t.check(ca != nil && ca.ID == a && ca.Token == 2, rules.Lanes, "lane_claim redelivers east's oldest job, token 2", "%+v", ca)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", a, ca.Token), DataB64: b64("step 2")}), rules.Checkpoint, "checkpoint")
	cc2 := t.laneClaim("orders", workLease)
	t.check(cc2 != nil && cc2.ID == c2, rules.Lanes, "lane_claim rotates to west again: two of west's jobs active", "%+v", cc2)
	cp := t.mustClaim("orders", workLease)
	t.check(cp.ID == p, rules.Claim, "claim takes the plain job", "%s", cp.ID)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", p, cp.Token), DataB64: b64("plain step")}), rules.Checkpoint, "checkpoint")
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 1}), rules.Ceiling, "lane_ceiling east 1")
	_, hasErr := t.hget(q.Errors(), a)
	t.check(hasErr, rules.Retry, "the retry left a last error for "+a, "none")
	t.completeExact("orders", a, ca.Token)
	t.completeExact("orders", c, cc.Token)
	t.completeExact("orders", p, cp.Token)
	t.completeExact("orders", c2, cc2.Token)
	t.onlyKeys("orders", rules.Complete, jobKey(q, b), laneKey(q, "east"), q.LaneOf(), q.Lanes(), q.Ring())
}

// A paused lane stays out of the ring when a complete brings it below its ceiling; a
// lane without a ceiling stays where it is.
func completeKeepsPausedLaneOut(t *T) {
	q := t.q("orders")
	n1 := t.laneEnqueue("orders", "north", "n1")
	t.laneEnqueue("orders", "north", "n2")
	s1 := t.laneEnqueue("orders", "south", "s1")
	t.laneEnqueue("orders", "south", "s2")
	c1 := t.laneClaim("orders", workLease)
	t.check(c1 != nil && c1.ID == n1, rules.Lanes, "lane_claim takes north's oldest", "%+v", c1)
	c2 := t.laneClaim("orders", workLease)
	t.check(c2 != nil && c2.ID == s1, rules.Lanes, "lane_claim rotates to south", "%+v", c2)
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "north", Ceiling: 1}), rules.Ceiling, "lane_ceiling north 1")
	t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: "north"}), rules.Lanes, "lane_pause north")
	ring := t.list(q.Ring())
	t.check(slices.Equal(ring, []string{"south"}), rules.Lanes, "ring [south] (north paused and at its ceiling)", "%v", ring)
	t.completeExact("orders", n1, c1.Token)
	t.completeExact("orders", s1, c2.Token)
}

func gone(t *T, qn, id string) {
	q := t.q(qn)
	t.check(!t.exists(jobKey(q, id)), rules.Complete, "no row", "the row %s is still there", jobKey(q, id))
	for _, k := range []string{q.Pending(), q.Active(), q.Scheduled(), q.Dead()} {
		t.in(k, id, false, rules.Complete)
	}
	t.cover(rules.Complete)
	for _, h := range []string{q.Errors(), q.Ckpt(), q.LaneOf()} {
		if v, ok := t.hget(h, id); ok {
			t.fail(rules.Complete, "no field for "+id+" in "+h, fmt.Sprintf("%s[%s] = %q", h, id, v))
		}
	}
}
