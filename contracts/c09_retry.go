package contracts

import (
	"fmt"
	"slices"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// c09 is contract C09: retry.
var c09 = Contract{ID: "C09", Name: "retry",
	Rule: "retry with backoff parks the job in scheduled with its last error; promote on the server clock returns it; the next claim mints token 2",
	clauses: []clause{
		{name: "promote-limit-at-its-maximum", body: scanLimit("promote").atItsMaximum},
		{name: "promote-limit-absent-is-its-default", body: scanLimit("promote").absentIsItsDefault},
		fieldsClause(fieldGroup{[]string{"retry", "promote"}, ownField}),
		{name: "backoff-parks-in-scheduled", body: backoffParksInScheduled},
		{name: "promote-on-server-clock", body: promoteOnServerClock},
		{name: "zero-delay-back-to-pending", body: zeroDelayBackToPending},
		{name: "checkpoint-across-zero-delay-retry", body: checkpointAcrossZeroDelayRetry},
		{name: "checkpoint-across-delayed-retry-and-promote", body: checkpointAcrossDelayedRetryAndPromote},
		{name: "promote-due-limit-count", body: promoteDueLimitCount},
		{name: "promote-default-limit", body: promoteDefaultLimit},
		{name: "due-at-time-is-due", body: dueAtTimeIsDue},
		{name: "due-after-time-stays", body: dueAfterTimeStays},
		{name: "walk-retry", body: walkRetry.body},
	},
}

func backoffParksInScheduled(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "x")
	c := t.mustClaim("orders", workLease)
	m := t.mark()
	before := t.now()
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, DelayMS: 60000, Error: "boom: upstream 503"})
	after := t.now()
	t.ok(err, rules.Retry, "retry")
	t.check(r.Outcome == "retried", rules.Retry, "outcome retried", "%q", r.Outcome)
	t.state("orders", id, "scheduled", 1, rules.Retry)
	t.leaseWithin(q.Scheduled(), id, before, after, 60000, rules.Retry)
	e, _ := t.hget(q.Errors(), id)
	t.check(e == "boom: upstream 503", rules.Retry, "the last error kept", "%q", e)
	t.in(q.Active(), id, false, rules.Retry)
	t.in(q.Pending(), id, false, rules.Retry)
	t.durationOnWire(m, lua.Retry, 60000)
}

func promoteOnServerClock(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "x")
	token := t.mustClaim("orders", workLease).Token
	later := func() int64 { // retry the claimed job 300 ms into the future: its due time
		_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, token), MaxAttempts: 5, DelayMS: 300, Error: "later"})
		t.ok(err, rules.Retry, "retry")
		due, _ := t.zscore(q.Scheduled(), id)
		return due
	}
	due := later()
	p, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders"})
	t.ok(err, rules.Promote, "promote")
	switch {
	case t.now() < due:
		t.check(p.Count == 0, rules.Promote, "nothing promoted before the due time", "count %d", p.Count)
		t.in(q.Scheduled(), id, true, rules.Promote)
	case p.Count != 0:
		// A loaded machine: the promote may have run past the due time (due-after-time-stays
		// decides the early one on every run). It took the job; the job is scheduled once more
		// for the promote on the server's clock below.
		t.check(p.Count == 1, rules.Promote, "a promote that may have run past the due time promotes at most the one job", "count %d", p.Count)
		token = t.mustClaim("orders", workLease).Token
		due = later()
	}
	t.waitPast(due)
	t.do("DEL", q.Wake())
	p, err = t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders"})
	t.ok(err, rules.Promote, "promote")
	t.check(p.Count == 1, rules.Promote, "promote returns the due job", "count %d", p.Count)
	t.state("orders", id, "pending", token, rules.Promote)
	t.in(q.Pending(), id, true, rules.Promote)
	t.in(q.Scheduled(), id, false, rules.Promote)
	t.check(t.llen(q.Wake()) == 1, rules.Wake, "promote arms the wake", "wake length %d", t.llen(q.Wake()))
	c2 := t.mustClaim("orders", workLease)
	t.check(c2.ID == id && c2.Token == token+1, rules.Tokens, fmt.Sprintf("the next claim mints token %d", token+1), "%s token %d", c2.ID, c2.Token)
	t.complete("orders", id, token+1)
}

func zeroDelayBackToPending(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "x")
	c := t.mustClaim("orders", workLease)
	t.do("DEL", q.Wake())
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, Error: "again"})
	t.ok(err, rules.Retry, "retry")
	t.check(r.Outcome == "retried", rules.Retry, "outcome retried", "%q", r.Outcome)
	t.state("orders", id, "pending", 1, rules.Retry)
	score, ok := t.zscore(q.Pending(), id)
	t.check(ok && score == 0, rules.Retry, "back in pending with score 0", "present %v score %d", ok, score)
	t.check(t.llen(q.Wake()) == 1, rules.Wake, "retry arms the wake", "wake length %d", t.llen(q.Wake()))
	e, _ := t.hget(q.Errors(), id)
	t.check(e == "again", rules.Retry, "the last error kept", "%q", e)
}

func checkpointAcrossZeroDelayRetry(t *T) {
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(rawPayload)})
	c := t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", id, c.Token, rawCkpt)
	t.lcClearWake("orders")
	why := "e1: «ünïcødé» ✗ \"q\"\t\\\n"
	out := t.lcRetry("orders", id, c.Token, 2, 0, why, rules.RetryPending)
	t.check(out == "retried", rules.RetryAtMax, "attempts 1 below max_attempts 2: retried", "%q", out)
	t.lcQueueIs("orders", lcWant{pending: []string{id}, errors: map[string]string{id: why}, ckpt: map[string]string{id: rawCkpt},
		rows: map[string]lcRow{id: {"pending", 1, rawPayload}}}, rules.RetryPending)
	t.lcWakeIs("orders", 1, rules.RetryWake, "retry with delay 0")
	c = t.lcRedelivered("orders", id, 2, rawPayload, rawCkpt, rules.CkptRetry)
	t.lcCheckpoint("orders", id, c.Token, rawCkpt2)
	t.lcWakeIs("orders", 1, rules.Wake, "the first retry's token still waits")
	out = t.lcRetry("orders", id, c.Token, 3, 0, "e2", rules.RetryError)
	t.check(out == "retried", rules.RetryAtMax, "attempts 2 below max_attempts 3: retried", "%q", out)
	t.lcWakeIs("orders", 1, rules.Wake, "a retry with a token already waiting (at most one)")
	t.lcQueueIs("orders", lcWant{pending: []string{id}, errors: map[string]string{id: "e2"}, ckpt: map[string]string{id: rawCkpt2},
		rows: map[string]lcRow{id: {"pending", 2, rawPayload}}}, rules.CkptReplace)
	c = t.lcRedelivered("orders", id, 3, rawPayload, rawCkpt2, rules.CkptReplace)
	t.complete("orders", id, c.Token)
	t.lcQueueIs("orders", lcWant{errors: map[string]string{}, ckpt: map[string]string{}}, rules.CompleteRemovesAll)
}

func checkpointAcrossDelayedRetryAndPromote(t *T) {
	q := t.q("orders")
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(rawPayload)})
	c := t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", id, c.Token, rawCkpt)
	t.lcClearWake("orders")
	from := t.now()
	out := t.lcRetry("orders", id, c.Token, 5, 250, "later", rules.RetryScheduled)
	to := t.now()
	t.check(out == "retried", rules.RetryAtMax, "attempts 1 below max_attempts 5: retried", "%q", out)
	due := t.leaseWithin(q.Scheduled(), id, from, to, 250, rules.RetryScheduled)
	t.lcQueueIs("orders", lcWant{scheduled: []string{id}, errors: map[string]string{id: "later"}, ckpt: map[string]string{id: rawCkpt},
		rows: map[string]lcRow{id: {"scheduled", 1, rawPayload}}}, rules.RetryScheduled)
	t.lcWakeIs("orders", 1, rules.RetryWake, "retry with a delay (retried)")
	t.lcClearWake("orders")
	before := t.snapshot()
	n := t.lcPromote("orders", 0)
	// A slow machine may let the due time pass first: then there is nothing to learn here, and
	// due-after-time-stays decides the early promote on every run.
	if t.now() < due {
		d := diff(before, t.snapshot())
		t.check(n == 0 && d == "", rules.PromoteDue, "a promote before the due time answers 0 and changes nothing", "count %d; %s", n, d)
	}
	t.waitPast(due)
	if n == 0 {
		n = t.lcPromote("orders", 0)
	}
	t.check(n == 1, rules.PromoteCount, "promote returns the one due job", "count %d", n)
	t.in(q.Scheduled(), id, false, rules.PromoteDue)
	t.lcQueueIs("orders", lcWant{pending: []string{id}, errors: map[string]string{id: "later"}, ckpt: map[string]string{id: rawCkpt},
		rows: map[string]lcRow{id: {"pending", 1, rawPayload}}}, rules.CkptRetry)
	t.lcWakeIs("orders", 1, rules.PromoteWake, "a promote that moved a job")
	c = t.lcRedelivered("orders", id, 2, rawPayload, rawCkpt, rules.CkptRetry)
	t.complete("orders", id, c.Token)
}

func promoteDueLimitCount(t *T) {
	q := t.q("orders")
	var soon []string
	for _, p := range []string{"a", "b", "c"} {
		soon = append(soon, t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(p), DelayMS: 100}))
	}
	later := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("d"), DelayMS: 60000})
	rows := map[string]lcRow{later: {"scheduled", 0, "d"}}
	for i, id := range soon {
		rows[id] = lcRow{"scheduled", 0, string(rune('a' + i))}
	}
	other := t.lcPlant("billing", "scheduled", 0, t.now()-5000, 1, func(int) string { return "billing" }) // another queue's due job
	last, _ := t.zscore(q.Scheduled(), soon[2])
	t.waitPast(last)
	t.lcClearWake("orders")
	n := t.lcPromote("orders", 2)
	t.check(n == 2, rules.PromoteLimit, "promote with limit 2 over three due jobs answers 2", "count %d", n)
	for _, id := range soon[:2] {
		rows[id] = lcRow{"pending", 0, rows[id].payload}
	}
	t.lcQueueIs("orders", lcWant{pending: soon[:2], scheduled: []string{soon[2], later}, rows: rows}, rules.PromoteLimit)
	t.lcWakeIs("orders", 1, rules.PromoteWake, "a promote that moved jobs")
	n = t.lcPromote("orders", 0)
	t.check(n == 1, rules.PromoteCount, "the next promote moves the one due job left", "count %d", n)
	rows[soon[2]] = lcRow{"pending", 0, "c"}
	t.lcQueueIs("orders", lcWant{pending: soon, scheduled: []string{later}, rows: rows}, rules.PromoteDue)
	t.lcWakeIs("orders", 1, rules.Wake, "a promote that moved a job with a token already waiting (at most one)")
	t.lcClearWake("orders")
	t.lcUnchanged(rules.PromoteWake, "a promote with nothing due (the wake stays empty)", func() {
		n = t.lcPromote("orders", 0)
	})
	t.check(n == 0, rules.PromoteCount, "a promote with nothing due answers 0", "count %d", n)
	t.lcQueueIs("billing", lcWant{scheduled: other, rows: map[string]lcRow{other[0]: {"scheduled", 0, "billing"}}}, rules.PromoteDue)
	t.check(!t.exists(t.q("billing").Wake()), rules.PromoteDue, "promote of orders leaves queue billing alone (no wake)", "billing's wake armed")
}

func promoteDefaultLimit(t *T) {
	q := t.q("orders")
	ids := t.lcPlant("orders", "scheduled", 0, t.now()-5000, 1001, func(int) string { return "p" })
	t.lcClearWake("orders")
	n := t.lcPromote("orders", 0)
	t.check(n == 1000, rules.PromoteLimit, "promote without a limit moves 1000 of 1001 due jobs (default limit 1000)", "count %d", n)
	left, _ := t.zset(q.Scheduled())
	t.check(t.lcZcard(q.Pending()) == 1000 && slices.Equal(left, ids[1000:]), rules.PromoteLimit,
		"1000 in pending, the last-due job still scheduled", "pending %d, scheduled %q", t.lcZcard(q.Pending()), left)
	t.lcWakeIs("orders", 1, rules.PromoteWake, "a promote that moved jobs")
	n = t.lcPromote("orders", 0)
	t.check(n == 1, rules.PromoteCount, "the next promote moves the last one", "count %d", n)
}

// dueAhead is how long after the server's TIME due-after-time-stays plants its job: well inside
// the second a port that rounds TIME up, or promotes with a grace window, would move early.
const dueAhead = 600

// dueAfterTimeStays plants a job due dueAhead ms after the server's TIME and promotes at once: a
// promote that certainly ran before the due time (the server's TIME after its reply is still
// earlier) answers 0 and changes nothing. A trial the machine made too slow to tell is run again
// with a fresh job, so the clause decides on every run, not only when the machine was quick.
func dueAfterTimeStays(t *T) {
	for i := range uint64(20) {
		id := jobID(1<<43 + i)
		due := t.lcPlantAfter("orders", "scheduled", id, 0, dueAhead)
		before := t.snapshot()
		n := t.lcPromote("orders", 0)
		if t.now() < due {
			d := diff(before, t.snapshot())
			t.check(n == 0 && d == "", rules.PromoteDue, fmt.Sprintf("a promote under %d ms before a job falls due answers 0 and changes nothing", dueAhead),
				"count %d; %s", n, d)
			return
		}
		t.waitPast(due)
		t.lcPromote("orders", 0) // the undecided trial's job leaves scheduled before the next
	}
	t.harness("20 trials in a row took %d ms or more from a plant to the promote's reply", dueAhead)
}

func dueAtTimeIsDue(t *T) {
	q := t.q("orders")
	id := jobID(1 << 42)
	t.lcAtTime(atTime{qn: "orders", id: id, state: "scheduled", mark: q.Scheduled(), op: "promote", rule: rules.PromoteDue,
		run: func() func(int64, string) {
			n := t.lcPromote("orders", 0)
			return func(due int64, why string) {
				_, pending := t.zscore(q.Pending(), id)
				t.check(n == 1 && pending, rules.PromoteDue, fmt.Sprintf("a job due at %d, %s, is due: promote moves it to pending", due, why),
					"count %d; in pending %v", n, pending)
			}
		}})
}
