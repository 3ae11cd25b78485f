package contracts

import (
	"fmt"
	"time"

	"github.com/echomq/kit/protocol"
)

// Limits exercised where they bite: every bound a document states, once at its maximum with
// enough data to fill it (the fields clauses send max and max+1, but on a nearly empty queue).

// scanLimitClause is the clause of one scan op (reap, promote, morgue): limit 10000 over 10001
// entries settles exactly 10000 and leaves one (morgue lists the oldest deaths first).
func scanLimitClause(s spec, op string) {
	s.clause(op+"-limit-at-its-maximum", clauseOpts{}, func(t *T) {
		const n = protocol.MaxLimit + 1
		q := t.q("orders")
		state := map[string]string{"reap": "active", "promote": "scheduled", "morgue": "dead"}[op]
		ids := t.lcPlant("orders", state, 1, t.now()-60_000, n, func(int) string { return "p" })
		var got int
		switch op {
		case "reap":
			r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5, Limit: protocol.MaxLimit})
			t.ok(err, ruleRangeLimit, "reap with limit 10000 over 10001 expired leases")
			got = int(r.Count)
			t.check(t.lcZcard(q.Active()) == 1 && t.lcZcard(q.Pending()) == protocol.MaxLimit, ruleReap,
				"10000 leases back in pending, one left in active", "active %d, pending %d", t.lcZcard(q.Active()), t.lcZcard(q.Pending()))
		case "promote":
			r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders", Limit: protocol.MaxLimit})
			t.ok(err, ruleRangeLimit, "promote with limit 10000 over 10001 due jobs")
			got = int(r.Count)
			t.check(t.lcZcard(q.Scheduled()) == 1 && t.lcZcard(q.Pending()) == protocol.MaxLimit, rulePromote,
				"10000 due jobs pending, one left scheduled", "scheduled %d, pending %d", t.lcZcard(q.Scheduled()), t.lcZcard(q.Pending()))
		case "morgue":
			m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders", Limit: protocol.MaxLimit})
			t.ok(err, ruleRangeLimit, "morgue with limit 10000 over 10001 dead jobs")
			got = len(m.Jobs)
			ordered := got == protocol.MaxLimit && m.Jobs[0].ID == ids[0] && m.Jobs[got-1].ID == ids[got-1]
			t.check(ordered, ruleMorgue, "the 10000 oldest deaths, oldest first", "%d jobs", got)
		}
		t.check(got == protocol.MaxLimit, ruleRangeLimit, fmt.Sprintf("%s with limit 10000 settles exactly 10000 of 10001", op), "%d", got)
	})
}

// parkAtMaximumClause is C14's: the most consumers the park op takes, each with a job.
func parkAtMaximumClause(s spec) {
	s.clause("park-at-its-maximum", clauseOpts{}, func(t *T) {
		n := protocol.MaxConsumers
		ids := kitIDs(n, 1<<41)
		t.kitEnqueue("orders", ids)
		start := time.Now()
		a := protocol.ParkArgs{Queue: "orders", Consumers: n, Jobs: n, LeaseMS: 30000, ParkMS: 1000, TimeoutMS: 20000}
		t.completed(<-t.park(a), start, 20*time.Second, ids, fmt.Sprintf("%d consumers (the most park takes) complete %d jobs", n, n))
	})
}
