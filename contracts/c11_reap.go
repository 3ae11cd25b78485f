package contracts

import (
	"fmt"
	"slices"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// c11 is contract C11: reap.
var c11 = Contract{ID: "C11", Name: "reap",
	Rule: "an expired lease is returned by one server-clock scan; the zombie's complete is EMQSTALE; a checkpoint written before the crash is read by the redelivery, and the new holder's complete succeeds (one job, two lives, one counter)",
	clauses: []clause{
		{name: "reap-limit-at-its-maximum", body: scanLimit("reap").atItsMaximum},
		{name: "reap-limit-absent-is-its-default", body: scanLimit("reap").absentIsItsDefault},
		fieldsClause(fieldGroup{[]string{"checkpoint", "reap"}, ownField}),
		{name: "expired-lease-returned", body: expiredLeaseReturned},
		{name: "zombie-stale-redelivery-reads-checkpoint", body: zombieStaleRedeliveryReadsCheckpoint},
		{name: "at-max-attempts-dead", body: atMaxAttemptsDead},
		{name: "live-lease-untouched", body: liveLeaseUntouched},
		{name: "limit-attempts-wake", body: limitAttemptsWake},
		{name: "checkpoint-bytes-across-reap-stale-writer", body: checkpointBytesAcrossReapStaleWriter},
		{name: "empty-checkpoint-is-not-none", body: emptyCheckpointIsNotNone},
		{name: "reap-default-limit", body: reapDefaultLimit},
		{name: "deadline-at-time-has-passed", body: deadlineAtTimeHasPassed},
		{name: "walk-reap", body: walkReap.body},
	},
}

func expiredLeaseReturned(t *T) {
	q := t.q("orders")
	id, live, tok := expire(t)
	t.do("DEL", q.Wake())
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
	t.ok(err, rules.Reap, "reap")
	t.check(r.Count == 1, rules.Reap, "one scan returns the one expired lease", "count %d", r.Count)
	t.state("orders", id, "pending", tok, rules.Reap)
	t.in(q.Pending(), id, true, rules.Reap)
	t.in(q.Active(), id, false, rules.Reap)
	t.in(q.Active(), live, true, rules.Reap)
	t.check(t.llen(q.Wake()) == 1, rules.Wake, "reap arms the wake", "wake length %d", t.llen(q.Wake()))
	ck, _ := t.hget(q.Ckpt(), id)
	t.check(ck == "step-1", rules.Checkpoint, "the checkpoint survives the reap", "%q", ck)
}

func zombieStaleRedeliveryReadsCheckpoint(t *T) {
	q := t.q("orders")
	id, _, tok := expire(t)
	_, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
	t.ok(err, rules.Reap, "reap")
	t.allStale("orders", id, tok, "by the zombie holder of the reaped lease")
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == id && c.Token == tok+1, rules.Tokens, "the redelivery holds the next token", "%s token %d", c.ID, c.Token)
	got := "<none>"
	if c.CheckpointB64 != nil {
		got = unb64(*c.CheckpointB64)
	}
	t.check(got == "step-1", rules.Checkpoint, `the redelivery reads the checkpoint "step-1"`, "%q", got)
	t.complete("orders", id, c.Token)
	t.check(!t.exists(jobKey(q, id)), rules.Complete, "the new holder's complete retires the job", "the row is still there")
	t.cover(rules.Checkpoint)
	if v, ok := t.hget(q.Ckpt(), id); ok {
		t.fail(rules.Checkpoint, "the checkpoint is removed by complete", fmt.Sprintf("%q", v))
	}
}

func atMaxAttemptsDead(t *T) {
	q := t.q("orders")
	id, live, tok := expire(t)
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: tok})
	t.ok(err, rules.Reap, "reap")
	t.check(r.Count == 1, rules.Reap, "reap returns the expired lease", "count %d", r.Count)
	t.state("orders", id, "dead", tok, rules.Reap)
	t.in(q.Dead(), id, true, rules.Reap)
	e, _ := t.hget(q.Errors(), id)
	t.check(e == "lease expired", rules.Reap, `the error "lease expired"`, "%q", e)
	t.lcQueueIs("orders", lcWant{dead: []string{id}, active: []string{live}, errors: map[string]string{id: "lease expired"},
		rows: map[string]lcRow{id: {"dead", tok, "crashy"}, live: {"active", 1, "healthy"}}}, rules.ReapDead)
}

func liveLeaseUntouched(t *T) {
	t.enqueue("orders", "x")
	t.mustClaim("orders", 60000)
	before := t.snapshot()
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
	t.ok(err, rules.Reap, "reap")
	d := diff(before, t.snapshot())
	t.check(r.Count == 0 && d == "", rules.Reap, "a live lease is not reaped: count 0, nothing changes", "count %d; %s", r.Count, d)
}

func limitAttemptsWake(t *T) {
	q := t.q("orders")
	var short []string
	rows := map[string]lcRow{}
	for _, p := range []string{"a", "b", "c"} {
		short = append(short, t.enqueue("orders", p))
		rows[short[len(short)-1]] = lcRow{"active", 1, p}
	}
	live := t.enqueue("orders", "live")
	rows[live] = lcRow{"active", 1, "live"}
	for range short {
		t.mustClaim("orders", 100)
	}
	t.mustClaim("orders", 60000)
	other := t.lcPlant("billing", "active", 1, t.now()-5000, 1, func(int) string { return "billing" }) // another queue's expired lease
	last, _ := t.zscore(q.Active(), short[2])
	t.waitPast(last)
	t.lcClearWake("orders")
	n := t.lcReap("orders", 2, 2)
	t.check(n == 2, rules.ReapLimit, "reap with limit 2 over three expired leases answers 2", "count %d", n)
	for _, id := range short[:2] {
		rows[id] = lcRow{"pending", 1, rows[id].payload}
	}
	t.lcQueueIs("orders", lcWant{pending: short[:2], active: []string{short[2], live}, dead: []string{}, rows: rows}, rules.ReapLimit)
	t.lcWakeIs("orders", 1, rules.ReapWake, "a reap that returned jobs")
	n = t.lcReap("orders", 2, 0)
	t.check(n == 1, rules.ReapReturn, "the next reap returns the one expired lease left", "count %d", n)
	rows[short[2]] = lcRow{"pending", 1, "c"}
	t.lcQueueIs("orders", lcWant{pending: short, active: []string{live}, rows: rows}, rules.ReapReturn)
	t.lcWakeIs("orders", 1, rules.Wake, "a reap that returned a job with a token already waiting (at most one)")
	t.lcClearWake("orders")
	t.lcUnchanged(rules.ReapExpired, "a reap with only a live lease (the wake stays empty)", func() {
		n = t.lcReap("orders", 1, 0)
	})
	t.check(n == 0, rules.ReapWake, "a reap with nothing expired answers 0", "count %d", n)
	t.lcQueueIs("billing", lcWant{active: other, rows: map[string]lcRow{other[0]: {"active", 1, "billing"}}}, rules.ReapExpired)
	t.check(!t.exists(t.q("billing").Wake()), rules.ReapExpired, "reap of orders leaves queue billing alone (no wake)", "billing's wake armed")
}

func checkpointBytesAcrossReapStaleWriter(t *T) {
	q := t.q("orders")
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(rawPayload)})
	c1 := t.mustClaim("orders", workLease)
	t.check(lcCkptOf(c1) == "<none>", rules.CkptRead, "a first claim returns no checkpoint", "%q", lcCkptOf(c1))
	t.lcCheckpoint("orders", id, c1.Token, rawCkpt)
	t.lcExpire("orders", id, c1.Token)
	n := t.lcReap("orders", 5, 0)
	t.check(n == 1, rules.ReapReturn, "reap returns the expired lease", "count %d", n)
	t.lcQueueIs("orders", lcWant{pending: []string{id}, ckpt: map[string]string{id: rawCkpt},
		rows: map[string]lcRow{id: {"pending", 1, rawPayload}}}, rules.CkptReap)
	c2 := t.lcRedelivered("orders", id, 2, rawPayload, rawCkpt, rules.CkptBytes)
	t.lcUnchanged(rules.StaleCheckpoint, "a checkpoint by the zombie (token 1) while token 2 holds the lease", func() {
		err := t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c1.Token), DataB64: b64("zombie")})
		t.refused(err, emqerr.Stale, rules.StaleCheckpoint, "the zombie's checkpoint")
	})
	t.allStale("orders", id, c1.Token, "by the zombie while the redelivery holds the lease")
	t.lcCheckpoint("orders", id, c2.Token, rawCkpt2+everyByte(true))
	ck, _ := t.hget(q.Ckpt(), id)
	t.check(ck == rawCkpt2+everyByte(true), rules.CkptReplace, fmt.Sprintf("the new holder's checkpoint %q replaces the old", rawCkpt2+everyByte(true)), "%q", ck)
	t.complete("orders", id, c2.Token)
	t.lcQueueIs("orders", lcWant{errors: map[string]string{}, ckpt: map[string]string{}}, rules.CkptRemoved)
}

func emptyCheckpointIsNotNone(t *T) {
	q := t.q("orders")
	empty := t.enqueue("orders", "empty")
	none := t.enqueue("orders", "none")
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == empty, rules.Claim, "the oldest job first", "%s", c.ID)
	t.lcCheckpoint("orders", empty, c.Token, "")
	t.lcExpire("orders", empty, c.Token)
	c = t.mustClaim("orders", 1)
	last, _ := t.zscore(q.Active(), none)
	t.waitPast(last)
	n := t.lcReap("orders", 5, 0)
	t.check(n == 2, rules.ReapReturn, "reap returns both expired leases", "count %d", n)
	t.lcQueueIs("orders", lcWant{pending: []string{empty, none}, ckpt: map[string]string{empty: ""},
		rows: map[string]lcRow{empty: {"pending", 1, "empty"}, none: {"pending", 1, "none"}}}, rules.CkptReap)
	c = t.mustClaim("orders", workLease)
	t.check(c.ID == empty && c.CheckpointB64 != nil && *c.CheckpointB64 == "", rules.CkptRead,
		`the redelivery of `+empty+` returns its empty checkpoint: checkpoint_b64 "" (not null)`, "%s checkpoint_b64 %s", c.ID, lcB64Field(c.CheckpointB64))
	c = t.mustClaim("orders", workLease)
	t.check(c.ID == none && c.CheckpointB64 == nil, rules.CkptRead,
		`the redelivery of `+none+`, which never checkpointed, returns checkpoint_b64 null`, "%s checkpoint_b64 %s", c.ID, lcB64Field(c.CheckpointB64))
}

func reapDefaultLimit(t *T) {
	q := t.q("orders")
	ids := t.lcPlant("orders", "active", 1, t.now()-5000, 1001, func(int) string { return "p" })
	t.lcClearWake("orders")
	n := t.lcReap("orders", 5, 0)
	t.check(n == 1000, rules.ReapLimit, "reap without a limit settles 1000 of 1001 expired leases (default limit 1000)", "count %d", n)
	left, _ := t.zset(q.Active())
	t.check(t.lcZcard(q.Pending()) == 1000 && slices.Equal(left, ids[1000:]), rules.ReapLimit,
		"1000 back in pending, the last-expired lease still active", "pending %d, active %q", t.lcZcard(q.Pending()), left)
	t.lcWakeIs("orders", 1, rules.ReapWake, "a reap that returned jobs")
	n = t.lcReap("orders", 5, 0)
	t.check(n == 1, rules.ReapReturn, "the next reap settles the last one", "count %d", n)
}

func deadlineAtTimeHasPassed(t *T) {
	q := t.q("orders")
	id := jobID(1 << 42)
	t.lcAtTime(atTime{qn: "orders", id: id, state: "active", attempts: 1, mark: q.Active(), op: "reap", rule: rules.ReapExpired,
		run: func() func(int64, string) {
			n := t.lcReap("orders", 5, 0)
			return func(deadline int64, why string) {
				_, pending := t.zscore(q.Pending(), id)
				t.check(n == 1 && pending, rules.ReapExpired, fmt.Sprintf("a lease whose deadline %d is %s has passed: reap returns it to pending", deadline, why),
					"count %d; in pending %v", n, pending)
			}
		}})
}

// expire claims a job and checkpoints it, claims another with a long lease, then has the first
// one's holder extend its lease to 1 ms and waits until that has passed on the server clock (a
// short lease from the claim would pass before the checkpoint on a busy machine).
func expire(t *T) (id, live string, tok int64) {
	q := t.q("orders")
	id = t.enqueue("orders", "crashy")
	live = t.enqueue("orders", "healthy")
	c := t.mustClaim("orders", 60000)
	t.check(c.ID == id, rules.Claim, "the oldest job first", "%s", c.ID)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("step-1")}), rules.Checkpoint, "checkpoint")
	t.mustClaim("orders", 60000)
	_, err := t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa("orders", id, c.Token), LeaseMS: 1})
	t.ok(err, rules.Extend, "extend of the first lease to 1 ms")
	deadline, _ := t.zscore(q.Active(), id)
	t.waitPast(deadline)
	return id, live, c.Token
}
