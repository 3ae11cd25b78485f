package contracts

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/internal/chop"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// c10 is contract C10: dead.
var c10 = Contract{ID: "C10", Name: "dead",
	Rule: "at max attempts the job goes to the morgue with its last error, browsable; revive returns it to pending; purge removes it",
	clauses: []clause{
		{name: "morgue-limit-at-its-maximum", body: scanLimit("morgue").atItsMaximum},
		{name: "morgue-limit-absent-is-its-default", body: scanLimit("morgue").absentIsItsDefault},
		fieldsClause(fieldGroup{[]string{"fail", "morgue"}, ownField}),
		{name: "max-attempts-to-morgue", body: maxAttemptsToMorgue},
		{name: "fail-to-morgue-in-death-order", body: failToMorgueInDeathOrder},
		{name: "revive-returns-to-pending", body: reviveReturnsToPending},
		{name: "purge-removes", body: purgeRemoves},
		{name: "retry-at-max-is-fail", body: retryAtMaxIsFail},
		{name: "fail-death-time-and-morgue-bytes", body: failDeathTimeAndMorgueBytes},
		{name: "reap-death-in-morgue", body: reapDeathInMorgue},
		{name: "morgue-order-and-limit", body: morgueOrderAndLimit},
		{name: "revive-purge-not-dead", body: revivePurgeNotDead},
		{name: "morgue-default-limit", body: morgueDefaultLimit},
		{name: "walk-morgue", body: walkMorgue.body},
		{name: "dropped-at-every-byte-of-the-morgue", body: droppedAtEveryByteOfTheMorgue, noHello: true, only: standaloneOnly},
	},
}

func maxAttemptsToMorgue(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "doomed")
	c1 := t.mustClaim("orders", workLease)
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c1.Token), MaxAttempts: 2, Error: "e1"})
	t.ok(err, rules.ReapDead, "retry (the first attempt fails)")
	t.check(r.Outcome == "retried", rules.Retry, "attempt 1 of 2 is retried", "%q", r.Outcome)
	c2 := t.mustClaim("orders", workLease)
	before := t.now()
	r, err = t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c2.Token), MaxAttempts: 2, Error: "e2"})
	after := t.now()
	t.ok(err, rules.ReapDead, "retry (the first attempt fails)")
	t.check(r.Outcome == "dead", rules.Retry, "attempt 2 of 2 is dead", "%q", r.Outcome)
	t.state("orders", id, "dead", 2, rules.Retry)
	died := t.leaseWithin(q.Dead(), id, before, after, 0, rules.Fail)
	e, _ := t.hget(q.Errors(), id)
	t.check(e == "e2", rules.Retry, "the last error e2 kept", "%q", e)
	for _, k := range []string{q.Active(), q.Pending(), q.Scheduled()} {
		t.in(k, id, false, rules.Retry)
	}
	m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders"})
	t.ok(err, rules.Morgue, "morgue")
	want := protocol.DeadJob{ID: id, Attempts: 2, PayloadB64: b64("doomed"), Error: "e2", DiedMS: died}
	t.check(len(m.Jobs) == 1 && m.Jobs[0] == want, rules.Morgue, fmt.Sprintf("the morgue lists %+v", want), "%+v", m.Jobs)
}

func failToMorgueInDeathOrder(t *T) {
	q := t.q("orders")
	a, _ := bury(t, "a", "fatal a")
	b, _ := bury(t, "b", "fatal b")
	t.state("orders", a, "dead", 1, rules.Fail)
	e, _ := t.hget(q.Errors(), b)
	t.check(e == "fatal b", rules.Fail, "the last error kept", "%q", e)
	m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders"})
	t.ok(err, rules.Morgue, "morgue")
	t.check(len(m.Jobs) == 2 && m.Jobs[0].ID == a && m.Jobs[1].ID == b && m.Jobs[0].DiedMS <= m.Jobs[1].DiedMS, rules.Morgue,
		"the morgue lists both, oldest death first", "%+v", m.Jobs)
}

func reviveReturnsToPending(t *T) {
	q := t.q("orders")
	id, tok := bury(t, "again", "fatal")
	by, _ := bury(t, "bystander", "fatal too") // revive touches the revived id's traces only
	t.lcClearWake("orders")
	r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
	t.ok(err, rules.Morgue, "revive")
	t.check(r.Changed, rules.Morgue, "revive of a dead job answers changed", "changed false")
	t.state("orders", id, "pending", tok, rules.Morgue)
	t.in(q.Pending(), id, true, rules.Morgue)
	t.in(q.Dead(), id, false, rules.Morgue)
	t.lcQueueIs("orders", lcWant{pending: []string{id}, dead: []string{by}, errors: map[string]string{by: "fatal too"},
		rows: map[string]lcRow{id: {"pending", tok, "again"}, by: {"dead", 1, "bystander"}}}, rules.ReviveClears)
	t.lcWakeIs("orders", 1, rules.ReviveWake, "revive")
	r, err = t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: by})
	t.ok(err, rules.Morgue, "revive")
	t.check(r.Changed, rules.Morgue, "revive of a dead job answers changed", "changed false")
	t.lcWakeIs("orders", 1, rules.Wake, "a revive with a token already waiting (at most one)")
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == id && c.Token == tok+1, rules.Tokens, fmt.Sprintf("the revived job's next token is %d (attempts intact)", tok+1), "%s token %d", c.ID, c.Token)
	before := t.snapshot()
	r, err = t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
	t.ok(err, rules.Morgue, "revive")
	d := diff(before, t.snapshot())
	t.check(!r.Changed && d == "", rules.Morgue, "revive of a job that is not dead: changed false, nothing changes", "changed %v; %s", r.Changed, d)
}

func purgeRemoves(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "bye")
	c := t.mustClaim("orders", workLease)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("half")}), rules.Checkpoint, "checkpoint")
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: "fatal"}), rules.Fail, "fail")
	by := t.enqueue("orders", "keep") // purge removes the purged id's traces only
	c = t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", by, c.Token, "keep-half")
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", by, c.Token), Error: "fatal keep"}), rules.Fail, "fail")
	r, err := t.D.Purge(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
	t.ok(err, rules.Morgue, "purge")
	t.check(r.Changed, rules.Morgue, "purge of a dead job answers changed", "changed false")
	t.check(!t.exists(jobKey(q, id)), rules.Morgue, "no row after purge", "the row is still there")
	t.in(q.Dead(), id, false, rules.Morgue)
	t.cover(rules.Morgue)
	for _, h := range []string{q.Errors(), q.Ckpt()} {
		if v, ok := t.hget(h, id); ok {
			t.fail(rules.Morgue, "no field for "+id+" in "+h+" after purge", fmt.Sprintf("%q", v))
		}
	}
	t.lcQueueIs("orders", lcWant{dead: []string{by}, errors: map[string]string{by: "fatal keep"}, ckpt: map[string]string{by: "keep-half"},
		rows: map[string]lcRow{by: {"dead", 1, "keep"}}}, rules.PurgeRemoves)
	r, err = t.D.Purge(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
	t.ok(err, rules.Morgue, "purge")
	t.check(!r.Changed, rules.Morgue, "a second purge answers changed: false", "changed true")
}

func retryAtMaxIsFail(t *T) {
	q := t.q("orders")
	x := t.enqueue("orders", "x")
	c := t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", x, c.Token, "cx")
	out := t.lcRetry("orders", x, c.Token, 2, 0, "e1", rules.RetryAtMax)
	t.check(out == "retried", rules.RetryAtMax, "attempts 1 = max_attempts−1: retried", "%q", out)
	c = t.mustClaim("orders", workLease)
	t.lcClearWake("orders")
	before := t.now()
	out = t.lcRetry("orders", x, c.Token, 2, 60000, "boom", rules.RetryAtMax)
	after := t.now()
	t.check(out == "dead", rules.RetryAtMax, "attempts 2 = max_attempts: dead", "%q", out)
	t.leaseWithin(q.Dead(), x, before, after, 0, rules.RetryAtMax)
	t.lcWakeIs("orders", 0, rules.RetryAtMax, "a retry at the limit, as fail (nothing to claim)")
	z := t.enqueue("orders", "z")
	c = t.mustClaim("orders", workLease)
	t.lcRetry("orders", z, c.Token, 5, 0, "e1", rules.RetryAtMax)
	c = t.mustClaim("orders", workLease)
	out = t.lcRetry("orders", z, c.Token, 1, 0, "over", rules.RetryAtMax)
	t.check(out == "dead", rules.RetryAtMax, "attempts 2 > max_attempts 1: dead", "%q", out)
	y := t.enqueue("orders", "y")
	c = t.mustClaim("orders", workLease)
	t.lcRetry("orders", y, c.Token, 5, 0, "first", rules.Retry)
	c = t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", y, c.Token, "cy")
	t.lcClearWake("orders")
	before = t.now()
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", y, c.Token), Error: "boom"}), rules.Fail, "fail")
	after = t.now()
	t.leaseWithin(q.Dead(), y, before, after, 0, rules.FailDeath)
	t.lcWakeIs("orders", 0, rules.FailDeath, "fail of a plain job (nothing to claim)")
	t.lcQueueIs("orders", lcWant{dead: []string{x, y, z}, errors: map[string]string{x: "boom", y: "boom", z: "over"}, ckpt: map[string]string{x: "cx", y: "cy"},
		rows: map[string]lcRow{x: {"dead", 2, "x"}, y: {"dead", 2, "y"}, z: {"dead", 2, "z"}}}, rules.RetryAtMax)
	want := []protocol.DeadJob{t.lcDeadJob("orders", x, 2, "x", "boom"), t.lcDeadJob("orders", z, 2, "z", "over"), t.lcDeadJob("orders", y, 2, "y", "boom")}
	m := t.lcMorgue("orders", 0)
	t.check(slices.Equal(m, want), rules.MorgueOp, fmt.Sprintf("the morgue lists %+v, oldest death first", want), "%+v", m)
}

func failDeathTimeAndMorgueBytes(t *T) {
	q := t.q("orders")
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(rawPayload)})
	c := t.mustClaim("orders", workLease)
	why := "fatal: état ✗ \"quoted\"\n2nd line " + strings.Repeat("long trace ", 400)
	before := t.now()
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: why}), rules.Fail, "fail")
	after := t.now()
	died := t.leaseWithin(q.Dead(), id, before, after, 0, rules.FailDeath)
	t.lcQueueIs("orders", lcWant{dead: []string{id}, errors: map[string]string{id: why},
		rows: map[string]lcRow{id: {"dead", 1, rawPayload}}}, rules.FailDeath)
	want := protocol.DeadJob{ID: id, Attempts: 1, PayloadB64: b64(rawPayload), Error: why, DiedMS: died}
	var m []protocol.DeadJob
	t.lcUnchanged(rules.MorgueOp, "morgue reads only", func() { m = t.lcMorgue("orders", 0) })
	t.check(len(m) == 1 && m[0] == want, rules.MorgueOp, fmt.Sprintf("the morgue lists exactly %+v", want), "%+v", m)
}

func reapDeathInMorgue(t *T) {
	q := t.q("orders")
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(rawPayload)})
	// A first attempt fails with its own error: the death replaces it with "lease expired".
	first := t.mustClaim("orders", 60000)
	_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, first.Token), MaxAttempts: 5, Error: "an earlier error"})
	t.ok(err, rules.ReapDead, "retry (the first attempt fails)")
	t.mustClaim("orders", 100)
	deadline, _ := t.zscore(q.Active(), id)
	t.waitPast(deadline)
	before := t.now()
	n := t.lcReap("orders", 2, 0)
	after := t.now()
	t.check(n == 1, rules.ReapDead, "reap settles the one expired lease", "count %d", n)
	died := t.leaseWithin(q.Dead(), id, before, after, 0, rules.ReapDead)
	t.lcQueueIs("orders", lcWant{dead: []string{id}, errors: map[string]string{id: "lease expired"},
		rows: map[string]lcRow{id: {"dead", 2, rawPayload}}}, rules.ReapDead)
	want := protocol.DeadJob{ID: id, Attempts: 2, PayloadB64: b64(rawPayload), Error: "lease expired", DiedMS: died}
	m := t.lcMorgue("orders", 0)
	t.check(len(m) == 1 && m[0] == want, rules.MorgueOp, fmt.Sprintf("the morgue lists exactly %+v", want), "%+v", m)
}

func morgueOrderAndLimit(t *T) {
	var want []protocol.DeadJob
	for _, p := range []string{"a", "b", "c"} {
		id, tok := bury(t, p, "fatal "+p)
		want = append(want, t.lcDeadJob("orders", id, tok, p, "fatal "+p))
	}
	var m []protocol.DeadJob
	t.lcUnchanged(rules.MorgueOp, "morgue reads only", func() { m = t.lcMorgue("orders", 2) })
	t.check(slices.Equal(m, want[:2]), rules.MorgueOp, fmt.Sprintf("morgue limit 2 lists the two oldest deaths %+v", want[:2]), "%+v", m)
	m = t.lcMorgue("orders", 0)
	t.check(slices.Equal(m, want), rules.MorgueOp, fmt.Sprintf("the morgue lists %+v, oldest death first", want), "%+v", m)
}

func revivePurgeNotDead(t *T) {
	bury(t, "dead", "fatal")
	revived, _ := bury(t, "revived", "fatal")
	_, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: revived})
	t.ok(err, rules.Morgue, "revive")
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == revived, rules.Claim, "the claim returns the revived job", "%s", c.ID)
	pending := t.enqueue("orders", "pending")
	scheduled := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
	absent := jobID(1 << 40)
	for _, id := range []string{revived, pending, scheduled, absent} {
		t.lcUnchanged(rules.NotDead, "revive and purge of "+id+", which is not dead", func() {
			for _, op := range []func(context.Context, protocol.JobArgs) (protocol.ChangedResult, error){t.D.Revive, t.D.Purge} {
				r, err := op(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
				t.ok(err, rules.NotDead, "revive/purge")
				t.check(!r.Changed, rules.NotDead, "changed: false for "+id+", which is not dead", "changed true")
			}
		})
	}
}

func morgueDefaultLimit(t *T) {
	payload := func(i int) string { return fmt.Sprintf("%s%d", rawPayload, i) }
	ids := t.lcPlant("orders", "dead", 3, t.now()-5000, 101, payload)
	m := t.lcMorgue("orders", 0)
	_, died := t.zset(t.q("orders").Dead())
	t.cover(rules.MorgueOp)
	if len(m) != 100 {
		t.fail(rules.MorgueOp, "morgue without a limit lists 100 of 101 dead jobs (default limit 100)", fmt.Sprintf("%d jobs", len(m)))
	}
	for i, j := range m {
		want := protocol.DeadJob{ID: ids[i], Attempts: 3, PayloadB64: b64(payload(i)), Error: fmt.Sprintf("error %d", i), DiedMS: died[ids[i]]}
		if j != want {
			t.fail(rules.MorgueOp, fmt.Sprintf("entry %d of the morgue is %+v (oldest death first)", i, want), fmt.Sprintf("%+v", j))
		}
	}
}

func bury(t *T, payload, why string) (string, int64) {
	id := t.enqueue("orders", payload)
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == id, rules.Claim, "the claim returns the job just enqueued", "%s", c.ID)
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: why}), rules.Fail, "fail")
	return id, c.Token
}

// droppedAtEveryByteOfTheMorgue is C10's, on a standalone server only (the relay stands in front
// of one server). A morgue answers from several of the server's replies (the dead list, then each
// job's row and error), and a port may read them in one pipeline. When the server drops the
// connection under a request, the request may answer INTERNAL (B-282), and otherwise answers as
// documented (B-66: each job's id, attempts, payload_b64, error, died_ms); it never makes an answer
// of the replies it read and the loss it met in place of one it did not read. Here the port says
// hello through a relay, one job dies with its error, and a morgue's replies are measured; then,
// for every byte position n of them, the relay hands on n bytes of the server's and drops the
// port's connections: the morgue must answer as the first one did, or INTERNAL, and the session
// must serve again within 30 s (B-282). Nothing waits on a clock: a cut the port's other traffic
// (a lease renewal's reply) moves only moves where the reply is cut.
func droppedAtEveryByteOfTheMorgue(t *T) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		id := t.enqueue("graves", "bones")
		c := t.mustClaim("graves", workLease)
		t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("graves", id, c.Token), Error: "fatal"}), rules.Fail, "fail")
		args := protocol.MorgueArgs{Queue: "graves"}
		var want protocol.MorgueResult
		t.atEveryByte(r, "a morgue", func() {
			var err error
			want, err = t.D.Morgue(t.ctx, args)
			t.ok(err, rules.Morgue, "morgue")
			t.check(len(want.Jobs) == 1 && want.Jobs[0].ID == id && want.Jobs[0].Error == "fatal", rules.Morgue,
				fmt.Sprintf("the morgue lists %s, dead with error \"fatal\"", id), "%+v", want.Jobs)
		}, func(n int64) error {
			got, err := t.D.Morgue(t.ctx, args)
			if err == nil {
				t.check(reflect.DeepEqual(got, want), rules.Dropped,
					fmt.Sprintf("a morgue whose connection the server dropped after %d bytes of its replies answers INTERNAL, or as documented (B-66): %+v", n, want.Jobs),
					"it answered %+v", got.Jobs)
			}
			return err
		})
	})
}
