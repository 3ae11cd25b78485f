package contracts

import (
	"fmt"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// c07 is contract C07: stale.
var c07 = Contract{ID: "C07", Name: "stale",
	Rule: "a wrong token, or a lease that has passed, is refused EMQSTALE and the row survives untouched; the live token still settles; extend moves the deadline",
	specs: func(s spec) {
		s.clause("wrong-token-refused", clauseOpts{}, func(t *T) {
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			t.allStale("orders", id, c.Token+1, "with a token the claim never issued")
			before := t.snapshot()
			t.refused(t.D.Complete(t.ctx, fa("orders", id, 0)), emqerr.Arg, ruleArgRanges, "complete with token 0")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleFenced, "a refused complete changes nothing", "%s", d)
			t.complete("orders", id, c.Token)
			t.check(!t.exists(jobKey(t.q("orders"), id)), ruleComplete, "the live token settles the job", "the row is still there")
		})
		s.clause("passed-lease-refused", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 100)
			deadline, _ := t.zscore(q.Active(), id)
			t.waitPast(deadline)
			t.allStale("orders", id, c.Token, "after the lease passed on the server clock (before any reap)")
			r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			t.check(r.Count == 1, ruleReap, "reap returns the expired lease", "count %d", r.Count)
			c2 := t.mustClaim("orders", 30000)
			t.check(c2.ID == id && c2.Token == c.Token+1, ruleTokens, "the redelivery holds the next token", "%s token %d", c2.ID, c2.Token)
			t.complete("orders", id, c2.Token)
		})
		s.clause("extend-moves-deadline", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 150)
			d0, _ := t.zscore(q.Active(), id)
			m := t.mark()
			before := t.now()
			e, err := t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa("orders", id, c.Token), LeaseMS: 30000})
			after := t.now()
			t.ok(err, ruleExtend, "extend")
			got := t.leaseWithin(q.Active(), id, before, after, 30000, ruleExtend)
			t.check(e.DeadlineMS == got, ruleExtend, fmt.Sprintf("extend answers the new deadline %d", got), "deadline_ms %d", e.DeadlineMS)
			t.durationOnWire(m, lua.Extend, 30000)
			t.waitPast(d0)
			t.complete("orders", id, c.Token)
		})
	},
}
