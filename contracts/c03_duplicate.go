package contracts

import (
	"github.com/echomq/kit/protocol"
)

// c03 is contract C03: duplicate.
var c03 = Contract{ID: "C03", Name: "duplicate",
	Rule: "a second enqueue of the same id answers duplicate and changes nothing, byte for byte",
	specs: func(s spec) {
		dup := func(t *T, id string, delay int64) {
			before := t.snapshot()
			r, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("second payload"), DelayMS: delay})
			t.ok(err, ruleEnqueue, "enqueue of a duplicate id")
			t.check(!r.Created && r.ID == id, ruleEnqueue, "the duplicate answers created: false with the same id", "created %v id %s", r.Created, r.ID)
			d := diff(before, t.snapshot())
			t.check(d == "", ruleEnqueue, "a duplicate enqueue changes nothing, byte for byte", "%s", d)
		}
		mintOne := func(t *T) string {
			m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
			t.ok(err, ruleIDs, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 1, ruleIDs, "mint n=1 answers one list of one id", "%v", m.IDs)
			t.validJob(m.IDs[0][0])
			return m.IDs[0][0]
		}
		s.clause("second-enqueue-changes-nothing", clauseOpts{}, func(t *T) {
			id := mintOne(t)
			got := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
			t.check(got == id, ruleEnqueue, "enqueue with an id keeps it", "answered id %s for %s", got, id)
			dup(t, id, 0)
			dup(t, id, 5000)
		})
		s.clause("duplicate-of-claimed-job", clauseOpts{}, func(t *T) {
			id := mintOne(t)
			t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id, ruleClaim, "the claim returns the only job", "%s", c.ID)
			dup(t, id, 0)
			t.complete("orders", id, c.Token)
		})
	},
}
