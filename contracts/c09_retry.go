package contracts

import (
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// c09 is contract C09: retry.
var c09 = Contract{ID: "C09", Name: "retry",
	Rule: "retry with backoff parks the job in scheduled with its last error; promote on the server clock returns it; the next claim mints token 2",
	specs: func(s spec) {
		s.clause("backoff-parks-in-scheduled", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			m := t.mark()
			before := t.now()
			r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, DelayMS: 60000, Error: "boom: upstream 503"})
			after := t.now()
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "retried", ruleRetry, "outcome retried", "%q", r.Outcome)
			t.state("orders", id, "scheduled", 1, ruleRetry)
			t.leaseWithin(q.Scheduled(), id, before, after, 60000, ruleRetry)
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "boom: upstream 503", ruleRetry, "the last error kept", "%q", e)
			t.in(q.Active(), id, false, ruleRetry)
			t.in(q.Pending(), id, false, ruleRetry)
			t.durationOnWire(m, lua.Retry, 60000)
		})
		s.clause("promote-on-server-clock", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, DelayMS: 300, Error: "later"})
			t.ok(err, ruleRetry, "retry")
			due, _ := t.zscore(q.Scheduled(), id)
			p, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders"})
			t.ok(err, rulePromote, "promote")
			if t.now() < due {
				t.check(p.Count == 0, rulePromote, "nothing promoted before the due time", "count %d", p.Count)
				t.in(q.Scheduled(), id, true, rulePromote)
			}
			t.waitPast(due)
			t.do("DEL", q.Wake())
			p, err = t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders"})
			t.ok(err, rulePromote, "promote")
			t.check(p.Count == 1, rulePromote, "promote returns the due job", "count %d", p.Count)
			t.state("orders", id, "pending", 1, rulePromote)
			t.in(q.Pending(), id, true, rulePromote)
			t.in(q.Scheduled(), id, false, rulePromote)
			t.check(t.llen(q.Wake()) == 1, ruleWake, "promote arms the wake", "wake length %d", t.llen(q.Wake()))
			c2 := t.mustClaim("orders", 30000)
			t.check(c2.ID == id && c2.Token == 2, ruleTokens, "the next claim mints token 2", "%s token %d", c2.ID, c2.Token)
			t.complete("orders", id, 2)
		})
		s.clause("zero-delay-back-to-pending", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			t.do("DEL", q.Wake())
			r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, Error: "again"})
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "retried", ruleRetry, "outcome retried", "%q", r.Outcome)
			t.state("orders", id, "pending", 1, ruleRetry)
			score, ok := t.zscore(q.Pending(), id)
			t.check(ok && score == 0, ruleRetry, "back in pending with score 0", "present %v score %d", ok, score)
			t.check(t.llen(q.Wake()) == 1, ruleWake, "retry arms the wake", "wake length %d", t.llen(q.Wake()))
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "again", ruleRetry, "the last error kept", "%q", e)
		})
	},
}
