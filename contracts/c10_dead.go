package contracts

import (
	"fmt"

	"github.com/echomq/kit/protocol"
)

// c10 is contract C10: dead.
var c10 = Contract{ID: "C10", Name: "dead",
	Rule: "at max attempts the job goes to the morgue with its last error, browsable; revive returns it to pending; purge removes it",
	specs: func(s spec) {
		// bury claims a fresh job and fails it; it returns the id and the token it died with.
		bury := func(t *T, payload, why string) (string, int64) {
			id := t.enqueue("orders", payload)
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id, ruleClaim, "the claim returns the job just enqueued", "%s", c.ID)
			t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: why}), ruleFail, "fail")
			return id, c.Token
		}
		s.clause("max-attempts-to-morgue", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "doomed")
			c1 := t.mustClaim("orders", 30000)
			r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c1.Token), MaxAttempts: 2, Error: "e1"})
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "retried", ruleRetry, "attempt 1 of 2 is retried", "%q", r.Outcome)
			c2 := t.mustClaim("orders", 30000)
			before := t.now()
			r, err = t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c2.Token), MaxAttempts: 2, Error: "e2"})
			after := t.now()
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "dead", ruleRetry, "attempt 2 of 2 is dead", "%q", r.Outcome)
			t.state("orders", id, "dead", 2, ruleRetry)
			died := t.leaseWithin(q.Dead(), id, before, after, 0, ruleFail)
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "e2", ruleRetry, "the last error e2 kept", "%q", e)
			for _, k := range []string{q.Active(), q.Pending(), q.Scheduled()} {
				t.in(k, id, false, ruleRetry)
			}
			m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders"})
			t.ok(err, ruleMorgue, "morgue")
			want := protocol.DeadJob{ID: id, Attempts: 2, PayloadB64: b64("doomed"), Error: "e2", DiedMS: died}
			t.check(len(m.Jobs) == 1 && m.Jobs[0] == want, ruleMorgue, fmt.Sprintf("the morgue lists %+v", want), "%+v", m.Jobs)
		})
		s.clause("fail-to-morgue-in-death-order", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			a, _ := bury(t, "a", "fatal a")
			b, _ := bury(t, "b", "fatal b")
			t.state("orders", a, "dead", 1, ruleFail)
			e, _ := t.hget(q.Errors(), b)
			t.check(e == "fatal b", ruleFail, "the last error kept", "%q", e)
			m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders"})
			t.ok(err, ruleMorgue, "morgue")
			t.check(len(m.Jobs) == 2 && m.Jobs[0].ID == a && m.Jobs[1].ID == b && m.Jobs[0].DiedMS <= m.Jobs[1].DiedMS, ruleMorgue,
				"the morgue lists both, oldest death first", "%+v", m.Jobs)
		})
		s.clause("revive-returns-to-pending", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, tok := bury(t, "again", "fatal")
			r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "revive")
			t.check(r.Changed, ruleMorgue, "revive of a dead job answers changed", "changed false")
			t.state("orders", id, "pending", tok, ruleMorgue)
			t.in(q.Pending(), id, true, ruleMorgue)
			t.in(q.Dead(), id, false, ruleMorgue)
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id && c.Token == tok+1, ruleTokens, fmt.Sprintf("the revived job's next token is %d (attempts intact)", tok+1), "%s token %d", c.ID, c.Token)
			before := t.snapshot()
			r, err = t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "revive")
			d := diff(before, t.snapshot())
			t.check(!r.Changed && d == "", ruleMorgue, "revive of a job that is not dead: changed false, nothing changes", "changed %v; %s", r.Changed, d)
		})
		s.clause("purge-removes", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "bye")
			c := t.mustClaim("orders", 30000)
			t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("half")}), ruleCheckpoint, "checkpoint")
			t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: "fatal"}), ruleFail, "fail")
			r, err := t.D.Purge(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "purge")
			t.check(r.Changed, ruleMorgue, "purge of a dead job answers changed", "changed false")
			t.check(!t.exists(jobKey(q, id)), ruleMorgue, "no row after purge", "the row is still there")
			t.in(q.Dead(), id, false, ruleMorgue)
			t.cover(ruleMorgue)
			for _, h := range []string{q.Errors(), q.Ckpt()} {
				if v, ok := t.hget(h, id); ok {
					t.fail(ruleMorgue, "no field for "+id+" in "+h+" after purge", fmt.Sprintf("%q", v))
				}
			}
			r, err = t.D.Purge(t.ctx, protocol.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "purge")
			t.check(!r.Changed, ruleMorgue, "a second purge answers changed: false", "changed true")
		})
	},
}
