package contracts

import (
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// c03 is contract C03: duplicate.
var c03 = Contract{ID: "C03", Name: "duplicate",
	Rule: "a second enqueue of the same id answers duplicate and changes nothing, byte for byte",
	clauses: []clause{
		{name: "enqueue-batch-duplicates", body: enqueueBatchDuplicates},
		{name: "second-enqueue-changes-nothing", body: secondEnqueueChangesNothing},
		{name: "duplicate-of-claimed-job", body: duplicateOfClaimedJob},
		{name: "lane-duplicate-changes-nothing", body: laneDuplicateChangesNothing},
		{name: "duplicate-in-every-state", body: duplicateInEveryState},
	},
}

func secondEnqueueChangesNothing(t *T) {
	id := t.mintOne()
	got := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
	t.check(got == id, rules.Enqueue, "enqueue with an id keeps it", "answered id %s for %s", got, id)
	dup(t, id, 0)
	dup(t, id, 5000)
}

func duplicateOfClaimedJob(t *T) {
	id := t.mintOne()
	t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == id, rules.Claim, "the claim returns the only job", "%s", c.ID)
	dup(t, id, 0)
	t.complete("orders", id, c.Token)
}

// A lane job's id is as taken as a plain one's: the same lane, another lane, no lane, a
// delay — each second enqueue answers created: false and leaves the lane, laneof, the
// ring and the (emptied) wake exactly as they were.
func laneDuplicateChangesNothing(t *T) {
	id := t.mintOne()
	got := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: id, Lane: "east", PayloadB64: b64("first payload")})
	t.check(got == id, rules.DupLane, "lane enqueue with an id keeps it", "answered id %s for %s", got, id)
	t.laneEnqueue("orders", "west", "other lane's job")
	plain := t.mintOne()
	t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: plain, PayloadB64: b64("plain")})
	for _, target := range []string{id, plain} {
		t.dupEveryWay("orders", target)
	}
}

// Every state a row can be in: the duplicate changes nothing, whatever it names.
func duplicateInEveryState(t *T) {
	q := t.q("orders")
	dead := t.enqueue("orders", "to die")
	c := t.mustClaim("orders", workLease)
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", dead, c.Token), Error: "boom"}), rules.Fail, "fail")
	active := t.enqueue("orders", "held")
	ca := t.mustClaim("orders", workLease)
	t.check(ca.ID == active, rules.Claim, "the claim takes the only pending job", "%s", ca.ID)
	laneActive := t.laneEnqueue("orders", "east", "lane held")
	cl := t.laneClaim("orders", workLease)
	t.check(cl != nil && cl.ID == laneActive, rules.Lanes, "lane_claim takes the lane's only job", "%+v", cl)
	pending := t.enqueue("orders", "waiting")
	scheduled := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
	lanePending := t.laneEnqueue("orders", "east", "lane waiting")
	laneScheduled := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: "west", PayloadB64: b64("lane later"), DelayMS: 60000})
	for _, w := range []struct{ id, state string }{
		{dead, "dead"}, {active, "active"}, {laneActive, "active"}, {pending, "pending"},
		{scheduled, "scheduled"}, {lanePending, "pending"}, {laneScheduled, "scheduled"},
	} {
		st, _ := t.hget(jobKey(q, w.id), "state")
		t.check(st == w.state, rules.Enqueue, fmt.Sprintf("%s is %s before its duplicate", w.id, w.state), "state %q", st)
		t.dupEveryWay("orders", w.id)
	}
}

// mintOne mints one id through the port.
func (t *T) mintOne() string {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
	t.ok(err, rules.IDs, "mint")
	t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 1, rules.IDs, "mint n=1 answers one list of one id", "%v", m.IDs)
	t.validJob(m.IDs[0][0])
	return m.IDs[0][0]
}

// dupEveryWay enqueues id again in every shape (plain, into lane east, into lane west, each
// with and without a delay), each time after emptying the wake.
func (t *T) dupEveryWay(qn, id string) {
	for _, lane := range []string{"", "east", "west"} {
		for _, delay := range []int64{0, 5000} {
			t.do("DEL", t.q(qn).Wake())
			t.dupUnchanged(qn, id, lane, delay)
		}
	}
}

// dupUnchanged enqueues id again (into lane, after delay) and requires created: false and the
// whole keyspace unchanged, byte for byte.
func (t *T) dupUnchanged(qn, id, lane string, delay int64) {
	rule := rules.Enqueue
	if lane != "" {
		rule = rules.DupLane
	}
	what := fmt.Sprintf("a duplicate enqueue of %s (lane %q, delay_ms %d)", id, lane, delay)
	before := t.snapshot()
	r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: qn, ID: id, Lane: lane, PayloadB64: b64("second payload"), DelayMS: delay})
	t.ok(err, rule, what)
	t.check(!r.Created && r.ID == id, rule, what+" answers created: false with the same id", "created %v id %s", r.Created, r.ID)
	d := diff(before, t.snapshot())
	wake := t.q(qn).Wake()
	if d != "" && strings.Count(d, "; ")+1 == strings.Count(d, wake) {
		t.fail(rules.DupWake, what+" leaves the (empty) wake empty", d)
	}
	t.check(d == "", rule, what+" changes nothing, byte for byte", "%s", d)
	t.cover(rules.DupWake)
}

func dup(t *T, id string, delay int64) {
	t.dupUnchanged("orders", id, "", delay)
}
