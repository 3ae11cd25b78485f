package suite

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/emqerr"
	. "github.com/onsi/ginkgo/v2"
)

// leaseWithin checks an active score against server TIME bounds taken around the claim.
func (t *T) leaseWithin(key, id string, before, after, lease int64, rule string) int64 {
	score, ok := t.zscore(key, id)
	t.check(ok && score >= before+lease && score <= after+lease, rule,
		fmt.Sprintf("%s in %s at server TIME + %d, within [%d, %d]", id, key, lease, before+lease, after+lease),
		"present %v, score %d", ok, score)
	return score
}

func (t *T) state(qn, id, want string, attempts int64, rule string) {
	row := t.hash(jobKey(t.q(qn), id))
	t.check(row["state"] == want && row["attempts"] == fmt.Sprint(attempts), rule,
		fmt.Sprintf("row state %s, attempts %d", want, attempts), "row %q", row)
}

func (t *T) in(key, id string, want bool, rule string) {
	_, ok := t.zscore(key, id)
	if ok != want {
		what := map[bool]string{true: "in", false: "not in"}
		t.fail(rule, fmt.Sprintf("%s %s %s", id, what[want], key), fmt.Sprintf("%s %s %s", id, what[ok], key))
	}
}

// allStale tries every fenced op with token and expects EMQSTALE and no change at all.
func (t *T) allStale(qn, id string, token int64, why string) {
	before := t.snapshot()
	f := fa(qn, id, token)
	t.refused(t.D.Complete(t.ctx, f), emqerr.Stale, ruleFenced, "complete "+why)
	_, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: f, MaxAttempts: 5, DelayMS: 0, Error: "zombie"})
	t.refused(err, emqerr.Stale, ruleFenced, "retry "+why)
	t.refused(t.D.Fail(t.ctx, drivers.FailArgs{FenceArgs: f, Error: "zombie"}), emqerr.Stale, ruleFenced, "fail "+why)
	t.refused(t.D.Checkpoint(t.ctx, drivers.CheckpointArgs{FenceArgs: f, DataB64: b64("zombie")}), emqerr.Stale, ruleFenced, "checkpoint "+why)
	_, err = t.D.Extend(t.ctx, drivers.ExtendArgs{FenceArgs: f, LeaseMS: 60000})
	t.refused(err, emqerr.Stale, ruleFenced, "extend "+why)
	d := diff(before, t.snapshot())
	t.check(d == "", ruleFenced, "refused transitions change nothing", "%s", d)
}

func c06(cfg *Config) {
	Describe("C06 claim", Label("C06"), func() {
		clause(cfg, "C06", "C06/claim/first-claim-token-1", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "the payload")
			m := t.mark()
			before := t.now()
			c := t.mustClaim("orders", 5000)
			after := t.now()
			t.check(c.ID == id && c.Token == 1 && unb64(c.PayloadB64) == "the payload" && c.CheckpointB64 == nil, ruleClaim,
				fmt.Sprintf("{id %s, payload %q, token 1, no checkpoint}", id, "the payload"),
				"{id %s, payload %q, token %d, checkpoint %v}", c.ID, unb64(c.PayloadB64), c.Token, c.CheckpointB64)
			t.state("orders", id, "active", 1, ruleClaim)
			t.leaseWithin(q.Active(), id, before, after, 5000, ruleClaim)
			t.in(q.Pending(), id, false, ruleClaim)
			t.durationOnWire(m, lua.Claim, 5000)
		})
		clause(cfg, "C06", "C06/claim/empty-queue-empty-reply", clauseOpts{}, func(t *T) {
			before := t.snapshot()
			t.check(t.claim("orders", 5000) == nil, ruleClaim, "an empty reply from an empty queue", "a job")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleClaim, "an empty claim changes nothing", "%s", d)
		})
		clause(cfg, "C06", "C06/claim/paused-queue-empty-reply", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "held")
			t.ok(t.D.Pause(t.ctx, drivers.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
			p, _ := t.hget(q.Meta(), "paused")
			t.check(p == "1", ruleQueuePause, "meta.paused = 1", "meta.paused = %q", p)
			t.check(t.claim("orders", 5000) == nil, ruleClaim, "an empty reply from a paused queue", "a job")
			t.state("orders", id, "pending", 0, ruleClaim)
			t.in(q.Pending(), id, true, ruleClaim)
			t.ok(t.D.Resume(t.ctx, drivers.QueueArgs{Queue: "orders"}), ruleQueuePause, "resume")
			c := t.mustClaim("orders", 5000)
			t.check(c.ID == id && c.Token == 1, ruleClaim, "after resume the held job, token 1", "%s token %d", c.ID, c.Token)
		})
		clause(cfg, "C06", "C06/claim/after-script-flush-exactly-once", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			first := t.enqueue("orders", "one")
			second := t.enqueue("orders", "two")
			t.do("SCRIPT", "FLUSH")
			m := t.mark()
			c := t.mustClaim("orders", 5000)
			t.check(c.ID == first && c.Token == 1, ruleNoScript, "the oldest job, token 1", "%s token %d", c.ID, c.Token)
			t.state("orders", first, "active", 1, ruleNoScript)
			pending, _ := t.zset(q.Pending())
			active, _ := t.zset(q.Active())
			t.check(strings.Join(pending, ",") == second && strings.Join(active, ",") == first, ruleNoScript,
				"exactly one claim happened: pending = [second], active = [first]", "pending %v, active %v", pending, active)
			claimSHA := t.cfg.Bundle.MustScript(lua.Claim).SHA1
			lines := t.portLines(m)
			loaded, pops := false, 0
			for _, l := range lines {
				if l.Cmd() == "SCRIPT" && strings.EqualFold(argAt(l, 1), "load") {
					sum := sha1.Sum([]byte(argAt(l, 2)))
					loaded = loaded || t.law.scripts[hex.EncodeToString(sum[:])].Name == lua.Claim
				}
				if l.Client == "lua" && l.Cmd() == "ZPOPMIN" {
					pops++
				}
			}
			if !loaded {
				t.fail(ruleNoScript, "SCRIPT LOAD of the claim's exact source after NOSCRIPT", "no such SCRIPT LOAD", lines...)
			}
			t.check(pops == 1, ruleNoScript, "the claim script ran once ("+claimSHA[:8]+"…)", "it popped %d times", pops)
		})
	})
}

func c07(cfg *Config) {
	Describe("C07 stale", Label("C07"), func() {
		clause(cfg, "C07", "C07/stale/wrong-token-refused", clauseOpts{}, func(t *T) {
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			t.allStale("orders", id, c.Token+1, "with a token the claim never issued")
			before := t.snapshot()
			t.refused(t.D.Complete(t.ctx, fa("orders", id, 0)), emqerr.Arg, `contracts/PROTOCOL.md A16: "tokens 1..1e14; anything else is EMQARG and changes nothing"`, "complete with token 0")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleFenced, "a refused complete changes nothing", "%s", d)
			t.complete("orders", id, c.Token)
			t.check(!t.exists(jobKey(t.q("orders"), id)), ruleComplete, "the live token settles the job", "the row is still there")
		})
		clause(cfg, "C07", "C07/stale/passed-lease-refused", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 100)
			deadline, _ := t.zscore(q.Active(), id)
			t.waitPast(deadline)
			t.allStale("orders", id, c.Token, "after the lease passed on the server clock (before any reap)")
			r, err := t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			t.check(r.Count == 1, ruleReap, "reap returns the expired lease", "count %d", r.Count)
			c2 := t.mustClaim("orders", 30000)
			t.check(c2.ID == id && c2.Token == c.Token+1, ruleTokens, "the redelivery holds the next token", "%s token %d", c2.ID, c2.Token)
			t.complete("orders", id, c2.Token)
		})
		clause(cfg, "C07", "C07/stale/extend-moves-deadline", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 150)
			d0, _ := t.zscore(q.Active(), id)
			m := t.mark()
			before := t.now()
			e, err := t.D.Extend(t.ctx, drivers.ExtendArgs{FenceArgs: fa("orders", id, c.Token), LeaseMS: 30000})
			after := t.now()
			t.ok(err, ruleExtend, "extend")
			got := t.leaseWithin(q.Active(), id, before, after, 30000, ruleExtend)
			t.check(e.DeadlineMS == got, ruleExtend, fmt.Sprintf("extend answers the new deadline %d", got), "deadline_ms %d", e.DeadlineMS)
			t.durationOnWire(m, lua.Extend, 30000)
			t.waitPast(d0)
			t.complete("orders", id, c.Token)
		})
	})
}

func c08(cfg *Config) {
	Describe("C08 complete", Label("C08"), func() {
		gone := func(t *T, qn, id string) {
			q := t.q(qn)
			t.check(!t.exists(jobKey(q, id)), ruleComplete, "no row", "the row %s is still there", jobKey(q, id))
			for _, k := range []string{q.Pending(), q.Active(), q.Scheduled(), q.Dead()} {
				t.in(k, id, false, ruleComplete)
			}
			for _, h := range []string{q.Errors(), q.Ckpt(), q.LaneOf()} {
				if v, ok := t.hget(h, id); ok {
					t.fail(ruleComplete, "no field for "+id+" in "+h, fmt.Sprintf("%s[%s] = %q", h, id, v))
				}
			}
		}
		clause(cfg, "C08", "C08/complete/retires-everywhere", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c1 := t.mustClaim("orders", 30000)
			_, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c1.Token), MaxAttempts: 5, Error: "first try failed"})
			t.ok(err, ruleRetry, "retry")
			c2 := t.mustClaim("orders", 30000)
			t.ok(t.D.Checkpoint(t.ctx, drivers.CheckpointArgs{FenceArgs: fa("orders", id, c2.Token), DataB64: b64("progress")}), ruleCheckpoint, "checkpoint")
			_, hasErr := t.hget(q.Errors(), id)
			_, hasCk := t.hget(q.Ckpt(), id)
			t.check(hasErr && hasCk, ruleCheckpoint, "a last error and a checkpoint before the complete", "error %v checkpoint %v", hasErr, hasCk)
			t.complete("orders", id, c2.Token)
			gone(t, "orders", id)
			for _, k := range t.allKeys() {
				if strings.HasPrefix(k, q.Prefix()) && k != q.Wake() {
					t.fail(ruleComplete, "nothing of the queue left but its wake", "left behind: "+k)
				}
			}
		})
		clause(cfg, "C08", "C08/complete/lane-job-retires-lane-count", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.laneEnqueue("orders", "east", "x")
			c := t.laneClaim("orders", 30000)
			t.check(c != nil && c.ID == id && c.Lane == "east", ruleLanes, "lane_claim returns the lane's job", "%+v", c)
			n, _ := t.hget(q.Lanes(), "active:east")
			t.check(n == "1", ruleLanes, "lanes active:east = 1 while claimed", "%q", n)
			t.complete("orders", id, c.Token)
			gone(t, "orders", id)
			n, ok := t.hget(q.Lanes(), "active:east")
			t.check(!ok || n == "0", ruleComplete, "no lane count left (active:east absent or 0)", "active:east = %q", n)
			members, _ := t.zset(laneKey(q, "east"))
			t.check(len(members) == 0, ruleComplete, "the lane holds nothing", "%v", members)
		})
		clause(cfg, "C08", "C08/complete/second-complete-is-stale", clauseOpts{}, func(t *T) {
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			t.complete("orders", id, c.Token)
			before := t.snapshot()
			t.refused(t.D.Complete(t.ctx, fa("orders", id, c.Token)), emqerr.Stale, ruleFenced, "a second complete of a retired job")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleFenced, "the refused complete changes nothing", "%s", d)
		})
	})
}

func c09(cfg *Config) {
	Describe("C09 retry", Label("C09"), func() {
		clause(cfg, "C09", "C09/retry/backoff-parks-in-scheduled", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			m := t.mark()
			before := t.now()
			r, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, DelayMS: 60000, Error: "boom: upstream 503"})
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
		clause(cfg, "C09", "C09/retry/promote-on-server-clock", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			_, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, DelayMS: 300, Error: "later"})
			t.ok(err, ruleRetry, "retry")
			due, _ := t.zscore(q.Scheduled(), id)
			p, err := t.D.Promote(t.ctx, drivers.PromoteArgs{Queue: "orders"})
			t.ok(err, rulePromote, "promote")
			if t.now() < due {
				t.check(p.Count == 0, rulePromote, "nothing promoted before the due time", "count %d", p.Count)
				t.in(q.Scheduled(), id, true, rulePromote)
			}
			t.waitPast(due)
			t.do("DEL", q.Wake())
			p, err = t.D.Promote(t.ctx, drivers.PromoteArgs{Queue: "orders"})
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
		clause(cfg, "C09", "C09/retry/zero-delay-back-to-pending", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "x")
			c := t.mustClaim("orders", 30000)
			t.do("DEL", q.Wake())
			r, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 5, Error: "again"})
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "retried", ruleRetry, "outcome retried", "%q", r.Outcome)
			t.state("orders", id, "pending", 1, ruleRetry)
			score, ok := t.zscore(q.Pending(), id)
			t.check(ok && score == 0, ruleRetry, "back in pending with score 0", "present %v score %d", ok, score)
			t.check(t.llen(q.Wake()) == 1, ruleWake, "retry arms the wake", "wake length %d", t.llen(q.Wake()))
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "again", ruleRetry, "the last error kept", "%q", e)
		})
	})
}

func c10(cfg *Config) {
	Describe("C10 dead", Label("C10"), func() {
		// bury claims a fresh job and fails it; it returns the id and the token it died with.
		bury := func(t *T, payload, why string) (string, int64) {
			id := t.enqueue("orders", payload)
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id, ruleClaim, "the claim returns the job just enqueued", "%s", c.ID)
			t.ok(t.D.Fail(t.ctx, drivers.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: why}), ruleFail, "fail")
			return id, c.Token
		}
		clause(cfg, "C10", "C10/dead/max-attempts-to-morgue", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "doomed")
			c1 := t.mustClaim("orders", 30000)
			r, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c1.Token), MaxAttempts: 2, Error: "e1"})
			t.ok(err, ruleRetry, "retry")
			t.check(r.Outcome == "retried", ruleRetry, "attempt 1 of 2 is retried", "%q", r.Outcome)
			c2 := t.mustClaim("orders", 30000)
			before := t.now()
			r, err = t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", id, c2.Token), MaxAttempts: 2, Error: "e2"})
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
			m, err := t.D.Morgue(t.ctx, drivers.MorgueArgs{Queue: "orders"})
			t.ok(err, ruleMorgue, "morgue")
			want := drivers.DeadJob{ID: id, Attempts: 2, PayloadB64: b64("doomed"), Error: "e2", DiedMS: died}
			t.check(len(m.Jobs) == 1 && m.Jobs[0] == want, ruleMorgue, fmt.Sprintf("the morgue lists %+v", want), "%+v", m.Jobs)
		})
		clause(cfg, "C10", "C10/dead/fail-to-morgue-in-death-order", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			a, _ := bury(t, "a", "fatal a")
			b, _ := bury(t, "b", "fatal b")
			t.state("orders", a, "dead", 1, ruleFail)
			e, _ := t.hget(q.Errors(), b)
			t.check(e == "fatal b", ruleFail, "the last error kept", "%q", e)
			m, err := t.D.Morgue(t.ctx, drivers.MorgueArgs{Queue: "orders"})
			t.ok(err, ruleMorgue, "morgue")
			t.check(len(m.Jobs) == 2 && m.Jobs[0].ID == a && m.Jobs[1].ID == b && m.Jobs[0].DiedMS <= m.Jobs[1].DiedMS, ruleMorgue,
				"the morgue lists both, oldest death first", "%+v", m.Jobs)
		})
		clause(cfg, "C10", "C10/dead/revive-returns-to-pending", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, tok := bury(t, "again", "fatal")
			r, err := t.D.Revive(t.ctx, drivers.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "revive")
			t.check(r.Changed, ruleMorgue, "revive of a dead job answers changed", "changed false")
			t.state("orders", id, "pending", tok, ruleMorgue)
			t.in(q.Pending(), id, true, ruleMorgue)
			t.in(q.Dead(), id, false, ruleMorgue)
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id && c.Token == tok+1, ruleTokens, fmt.Sprintf("the revived job's next token is %d (attempts intact)", tok+1), "%s token %d", c.ID, c.Token)
			before := t.snapshot()
			r, err = t.D.Revive(t.ctx, drivers.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "revive")
			d := diff(before, t.snapshot())
			t.check(!r.Changed && d == "", ruleMorgue, "revive of a job that is not dead: changed false, nothing changes", "changed %v; %s", r.Changed, d)
		})
		clause(cfg, "C10", "C10/dead/purge-removes", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id := t.enqueue("orders", "bye")
			c := t.mustClaim("orders", 30000)
			t.ok(t.D.Checkpoint(t.ctx, drivers.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("half")}), ruleCheckpoint, "checkpoint")
			t.ok(t.D.Fail(t.ctx, drivers.FailArgs{FenceArgs: fa("orders", id, c.Token), Error: "fatal"}), ruleFail, "fail")
			r, err := t.D.Purge(t.ctx, drivers.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "purge")
			t.check(r.Changed, ruleMorgue, "purge of a dead job answers changed", "changed false")
			t.check(!t.exists(jobKey(q, id)), ruleMorgue, "no row after purge", "the row is still there")
			t.in(q.Dead(), id, false, ruleMorgue)
			for _, h := range []string{q.Errors(), q.Ckpt()} {
				if v, ok := t.hget(h, id); ok {
					t.fail(ruleMorgue+"; "+ruleCheckpoint, "no field for "+id+" in "+h+" after purge", fmt.Sprintf("%q", v))
				}
			}
			r, err = t.D.Purge(t.ctx, drivers.JobArgs{Queue: "orders", ID: id})
			t.ok(err, ruleMorgue, "purge")
			t.check(!r.Changed, ruleMorgue, "a second purge answers changed: false", "changed true")
		})
	})
}

func c11(cfg *Config) {
	Describe("C11 reap", Label("C11"), func() {
		// expire claims a job with a short lease and a checkpoint, claims another with a long one,
		// and waits until the short lease has passed on the server clock.
		expire := func(t *T) (id, live string, tok int64) {
			q := t.q("orders")
			id = t.enqueue("orders", "crashy")
			live = t.enqueue("orders", "healthy")
			c := t.mustClaim("orders", 100)
			t.check(c.ID == id, ruleClaim, "the oldest job first", "%s", c.ID)
			t.ok(t.D.Checkpoint(t.ctx, drivers.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: b64("step-1")}), ruleCheckpoint, "checkpoint")
			t.mustClaim("orders", 60000)
			deadline, _ := t.zscore(q.Active(), id)
			t.waitPast(deadline)
			return id, live, c.Token
		}
		clause(cfg, "C11", "C11/reap/expired-lease-returned", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, live, tok := expire(t)
			t.do("DEL", q.Wake())
			r, err := t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: 5})
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
		clause(cfg, "C11", "C11/reap/zombie-stale-redelivery-reads-checkpoint", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, _, tok := expire(t)
			_, err := t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: 5})
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
			if v, ok := t.hget(q.Ckpt(), id); ok {
				t.fail(ruleCheckpoint, "the checkpoint is removed by complete", fmt.Sprintf("%q", v))
			}
		})
		clause(cfg, "C11", "C11/reap/at-max-attempts-dead", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			id, _, tok := expire(t)
			r, err := t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: tok})
			t.ok(err, ruleReap, "reap")
			t.check(r.Count == 1, ruleReap, "reap returns the expired lease", "count %d", r.Count)
			t.state("orders", id, "dead", tok, ruleReap)
			t.in(q.Dead(), id, true, ruleReap)
			e, _ := t.hget(q.Errors(), id)
			t.check(e == "lease expired", ruleReap, `the error "lease expired"`, "%q", e)
		})
		clause(cfg, "C11", "C11/reap/live-lease-untouched", clauseOpts{}, func(t *T) {
			t.enqueue("orders", "x")
			t.mustClaim("orders", 60000)
			before := t.snapshot()
			r, err := t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			d := diff(before, t.snapshot())
			t.check(r.Count == 0 && d == "", ruleReap, "a live lease is not reaped: count 0, nothing changes", "count %d; %s", r.Count, d)
		})
	})
}
