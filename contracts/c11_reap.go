package contracts

import (
	"fmt"

	"github.com/echomq/kit/protocol"
)

// c11 is contract C11: reap.
var c11 = Contract{ID: "C11", Name: "reap",
	Rule: "an expired lease is returned by one server-clock scan; the zombie's complete is EMQSTALE; a checkpoint written before the crash is read by the redelivery, and the new holder's complete succeeds (one job, two lives, one counter)",
	specs: func(s spec) {
		// expire claims a job with a short lease and a checkpoint, claims another with a long one,
		// and waits until the short lease has passed on the server clock.
		expire := func(t *T) (id, live string, tok int64) {
			q := t.q("orders")
			id = t.enqueue("orders", "crashy")
			live = t.enqueue("orders", "healthy")
			c := t.mustClaim("orders", 100)
			t.check(c.ID == id, ruleClaim, "the oldest job first", "%s", c.ID)
			t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("step-1")}), ruleCheckpoint, "checkpoint")
			t.mustClaim("orders", 60000)
			deadline, _ := t.zscore(q.Active(), id)
			t.waitPast(deadline)
			return id, live, c.Token
		}
		s.clause("expired-lease-returned", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, live, tok := expire(t)
			t.do("DEL", q.Wake())
			r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			t.check(r.Count == 1, ruleReap, "one scan returns the one expired lease", "count %d", r.Count)
			t.state("orders", id, "pending", tok, ruleReap)
			t.in(q.Pending(), id, true, ruleReap)
			t.in(q.Active(), id, false, ruleReap)
			t.in(q.Active(), live, true, ruleReap)
			t.check(t.llen(q.Wake()) == 1, ruleWake, "reap arms the wake", "wake length %d", t.llen(q.Wake()))
			ck, _ := t.hget(q.Ckpt(), id)
			t.check(ck == "step-1", ruleCheckpoint, "the checkpoint survives the reap", "%q", ck)
		})
		s.clause("zombie-stale-redelivery-reads-checkpoint", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, _, tok := expire(t)
			_, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			t.allStale("orders", id, tok, "by the zombie holder of the reaped lease")
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id && c.Token == tok+1, ruleTokens, "the redelivery holds the next token", "%s token %d", c.ID, c.Token)
			got := "<none>"
			if c.CheckpointB64 != nil {
				got = unb64(*c.CheckpointB64)
			}
			t.check(got == "step-1", ruleCheckpoint, `the redelivery reads the checkpoint "step-1"`, "%q", got)
			t.complete("orders", id, c.Token)
			t.check(!t.exists(jobKey(q, id)), ruleComplete, "the new holder's complete retires the job", "the row is still there")
			t.cover(ruleCheckpoint)
			if v, ok := t.hget(q.Ckpt(), id); ok {
				t.fail(ruleCheckpoint, "the checkpoint is removed by complete", fmt.Sprintf("%q", v))
			}
		})
		s.clause("at-max-attempts-dead", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, _, tok := expire(t)
			r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: tok})
			t.ok(err, ruleReap, "reap")
			t.check(r.Count == 1, ruleReap, "reap returns the expired lease", "count %d", r.Count)
			t.state("orders", id, "dead", tok, ruleReap)
			t.in(q.Dead(), id, true, ruleReap)
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "lease expired", ruleReap, `the error "lease expired"`, "%q", e)
		})
		s.clause("live-lease-untouched", clauseOpts{}, func(t *T) {
			t.enqueue("orders", "x")
			t.mustClaim("orders", 60000)
			before := t.snapshot()
			r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			d := diff(before, t.snapshot())
			t.check(r.Count == 0 && d == "", ruleReap, "a live lease is not reaped: count 0, nothing changes", "count %d; %s", r.Count, d)
		})
	},
}
