package contracts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/internal/model"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// laneModel is the lane model (model.Lanes) as a clause watches it: watchWake when the clause
// empties the wake before the steps it checks, so that the wake's content is the A13 duty of the
// last op, and wakeRule the duty that op owes (a rejoin's, or a claim's re-arm).
type laneModel struct {
	*model.Lanes
	watchWake bool
	wakeRule  rules.Rule
}

func newLaneModel(q string) *laneModel { return &laneModel{Lanes: model.NewLanes(q)} }

func render(h map[string]string) string {
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fs = append(fs, k+"="+h[k])
	}
	return "{" + strings.Join(fs, " ") + "}"
}

// lanesAre compares the port's lane keyspace with the model after step, quoting rule (the rule
// of the op just run) for any difference: every lane zset (members in order, score 0), the plain
// pending set (empty: every job lives in a lane), active, scheduled and dead membership, every
// row's state, the lanes hash and laneof exactly, the ring as a list, and the wake when watched.
func (t *T) lanesAre(m *laneModel, step string, rule rules.Rule) {
	q := t.q(m.Queue)
	t.cover(rule)
	where := func(what string) string { return step + ": " + what }
	for _, k := range t.allKeys() {
		g, ok := strings.CutPrefix(k, q.Prefix()+"lane:")
		if ok && len(m.Pending[g]) == 0 {
			t.fail(rule, where("lane "+g+" has no pending ids, so no lane key"), fmt.Sprintf("%s holds %v", k, t.zsetMembers(k)))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(m.Pending)) {
		ms, sc := t.zset(laneKey(q, g))
		t.check(slices.Equal(ms, m.Pending[g]), rule, where(fmt.Sprintf("lane %s holds exactly %v, oldest first", g, m.Pending[g])), "%v", ms)
		for _, id := range ms {
			t.check(sc[id] == 0, rule, where("lane ids are scored 0"), "%s scored %d", id, sc[id])
		}
	}
	pend, _ := t.zset(q.Pending())
	t.check(len(pend) == 0, rule, where("lane jobs never enter the plain pending set"), "pending %v", pend)
	for _, set := range []struct{ key, state string }{{q.Active(), "active"}, {q.Scheduled(), "scheduled"}, {q.Dead(), "dead"}} {
		got, _ := t.zset(set.key)
		slices.Sort(got)
		want := m.IDs(set.state)
		t.check(slices.Equal(got, want), rule, where(fmt.Sprintf("%s holds exactly %v", set.state, want)), "%v", got)
	}
	for _, id := range slices.Sorted(maps.Keys(m.State)) {
		row := render(t.hash(jobKey(q, id)))
		want := render(map[string]string{"state": m.State[id], "attempts": fmt.Sprint(m.Tokens[id]), "payload": m.Payload[id]})
		t.check(row == want, rule, where(fmt.Sprintf("job %s's row is exactly %q", id, want)), "%q", row)
	}
	h := t.hash(q.Lanes())
	t.cover(rules.ActiveZero)
	for f, v := range h {
		if strings.HasPrefix(f, "active:") && v == "0" {
			t.fail(rules.ActiveZero, where("no active:<g> field at 0 (deleted when it reaches 0)"), f+" = 0")
		}
	}
	lanes, want := render(h), render(m.LanesHash())
	t.check(lanes == want, rule, where("the lanes hash is exactly "+want+" (active:<g> deleted at 0, A14)"), "%s", lanes)
	laneof, wantOf := render(t.hash(q.LaneOf())), render(m.LaneOf)
	t.check(laneof == wantOf, rule, where("laneof is exactly "+wantOf), "%s", laneof)
	ring := t.list(q.Ring())
	t.check(slices.Equal(ring, m.Ring), rule, where(fmt.Sprintf("the ring is exactly %v, in that order (A14: a lane keeps its place, rejoins at the tail)", m.Ring)), "%v", ring)
	if m.watchWake {
		n := t.llen(q.Wake())
		wr := cmp.Or(m.wakeRule, rules.RejoinWake)
		m.wakeRule = rules.Rule{}
		t.check(n == int64(m.Wake), wr, where(fmt.Sprintf("the wake holds %d token(s) (A13)", m.Wake)), "%d", n)
	}
}

func (t *T) zsetMembers(k string) []string { ms, _ := t.zset(k); return ms }

// drainWake empties the wake so the next op's A13 duty can be observed.
func (t *T) drainWake(m *laneModel) {
	t.do("DEL", t.q(m.Queue).Wake())
	m.Wake = 0
}

// Lane ops applied to the port and to the model alike; each checks the reply and then the
// whole lane keyspace under rule.

func (t *T) mEnqueue(m *laneModel, g, payload string, delay int64, rule rules.Rule) string {
	payload += "\x00\x80\xfe\xff" // bytes that are not UTF-8 must survive every lane transition
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: m.Queue, Lane: g, PayloadB64: b64(payload), DelayMS: delay})
	m.Payload[id] = payload
	m.Enqueue(id, g, delay > 0)
	t.lanesAre(m, fmt.Sprintf("lane_enqueue %s into %s (delay %d)", id, g, delay), rule)
	return id
}

// mClaim lane-claims and checks the reply is the model's (lane at the ring's head, its oldest
// id); it returns the claimed id, "" when the model says empty.
func (t *T) mClaim(m *laneModel, lease int64, rule rules.Rule) string {
	wantG, wantID := m.Claim()
	m.wakeRule = rules.ClaimRearm
	before := t.now()
	c := t.laneClaim(m.Queue, lease)
	after := t.now()
	if wantID == "" {
		t.check(c == nil, rule, "lane_claim answers empty: no lane is serviceable", "%+v", c)
		t.lanesAre(m, "an empty lane_claim", rule)
		return ""
	}
	if c == nil {
		t.fail(rule, fmt.Sprintf("lane_claim takes %s from lane %s (the ring's head)", wantID, wantG), "an empty reply")
	}
	t.check(c.ID == wantID && c.Lane == wantG && c.Token == m.Tokens[wantID], rule,
		fmt.Sprintf("lane_claim takes %s (attempt %d) from lane %s, the ring's head", wantID, m.Tokens[wantID], wantG),
		"%s (attempt %d) from lane %s", c.ID, c.Token, c.Lane)
	t.check(c.PayloadB64 == b64(m.Payload[wantID]), rules.Claim, "lane_claim replies the enqueued payload bytes", "%q", unb64(c.PayloadB64))
	t.check(c.CheckpointB64 == nil, rules.Checkpoint, "no checkpoint was saved: the reply's checkpoint is null (A3)", "checkpoint_b64 %s", orNull(c.CheckpointB64))
	t.leaseWithin(t.q(m.Queue).Active(), wantID, before, after, lease, rules.Claim)
	t.lanesAre(m, "lane_claim of "+wantID, rule)
	return wantID
}

func (t *T) mComplete(m *laneModel, id string, rule rules.Rule) {
	t.complete(m.Queue, id, m.Tokens[id])
	m.Complete(id)
	t.lanesAre(m, "complete "+id, rule)
}

// mCompleteBatch settles ids with one complete_batch (A17): each pair as complete settles it,
// in pair order, so the model completes them one after another.
func (t *T) mCompleteBatch(m *laneModel, ids []string, rule rules.Rule) {
	pairs := make([]protocol.Pair, len(ids))
	for i, id := range ids {
		pairs[i] = protocol.Pair{ID: id, Token: m.Tokens[id]}
	}
	r, err := t.batcher().CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: m.Queue, Jobs: pairs})
	t.ok(err, rules.BatchComplete, fmt.Sprintf("complete_batch of %v with their live tokens", ids))
	settled := len(r.Results) == len(ids)
	for _, res := range r.Results {
		settled = settled && res.OK
	}
	t.check(settled, rules.BatchComplete, fmt.Sprintf("complete_batch of %v: every pair settles", ids), "%+v", r.Results)
	for _, id := range ids {
		m.Complete(id)
	}
	t.lanesAre(m, fmt.Sprintf("complete_batch of %v", ids), rule)
}

func (t *T) mRetry(m *laneModel, id string, max, delay int64, rule rules.Rule) {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(m.Queue, id, m.Tokens[id]), MaxAttempts: max, DelayMS: delay, Error: "boom"})
	t.ok(err, rules.Retry, "retry with the live token")
	dead := m.Tokens[id] >= max
	want := map[bool]string{true: "dead", false: "retried"}[dead]
	t.check(r.Outcome == want, rules.Retry, "retry answers "+want, "%q", r.Outcome)
	m.Retry(id, dead, delay > 0)
	t.lanesAre(m, fmt.Sprintf("retry %s (max %d, delay %d)", id, max, delay), rule)
}

func (t *T) mFail(m *laneModel, id string, rule rules.Rule) {
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa(m.Queue, id, m.Tokens[id]), Error: "broken"}), rules.Fail, "fail with the live token")
	m.Fail(id)
	t.lanesAre(m, "fail "+id, rule)
}

// byScore orders ids as a script walking a zset by score (ties by id bytes) meets them, and
// tells when the last of them is due (lease or due time, on the server's clock).
func (t *T) byScore(key string, ids []string) ([]string, int64) {
	sc := map[string]int64{}
	for _, id := range ids {
		sc[id], _ = t.zscore(key, id)
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(sc[a], sc[b]), cmp.Compare(a, b)) })
	return out, sc[out[len(out)-1]]
}

// mReap waits past the leases of ids, then reaps them (they return in deadline order).
func (t *T) mReap(m *laneModel, ids []string, max int64, rule rules.Rule) {
	ids, last := t.byScore(t.q(m.Queue).Active(), ids)
	t.waitPast(last)
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: m.Queue, MaxAttempts: max, Limit: 100})
	t.ok(err, rules.Reap, "reap")
	t.check(r.Count == int64(len(ids)), rules.Reap, fmt.Sprintf("reap answers %d", len(ids)), "%d", r.Count)
	m.Reap(ids, max)
	t.lanesAre(m, fmt.Sprintf("reap of %v (max %d)", ids, max), rule)
}

// mPromote waits until ids are due, then promotes them (they return in due order).
func (t *T) mPromote(m *laneModel, ids []string, rule rules.Rule) {
	ids, last := t.byScore(t.q(m.Queue).Scheduled(), ids)
	t.waitPast(last)
	r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: m.Queue, Limit: 100})
	t.ok(err, rules.Promote, "promote")
	t.check(r.Count == int64(len(ids)), rules.Promote, fmt.Sprintf("promote answers %d", len(ids)), "%d", r.Count)
	for _, id := range ids {
		m.Back(id)
	}
	t.lanesAre(m, fmt.Sprintf("promote of %v", ids), rule)
}

func (t *T) mRevive(m *laneModel, id string, rule rules.Rule) {
	r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: m.Queue, ID: id})
	t.ok(err, rules.Morgue, "revive")
	t.check(r.Changed, rules.Morgue, "revive of a dead job answers changed", "%+v", r)
	m.Back(id)
	t.lanesAre(m, "revive "+id, rule)
}

func (t *T) mPurge(m *laneModel, id string, rule rules.Rule) {
	r, err := t.D.Purge(t.ctx, protocol.JobArgs{Queue: m.Queue, ID: id})
	t.ok(err, rules.Morgue, "purge")
	t.check(r.Changed, rules.Morgue, "purge of a dead job answers changed", "%+v", r)
	m.Purge(id)
	t.lanesAre(m, "purge "+id, rule)
}

func (t *T) mCeiling(m *laneModel, g string, n int, rule rules.Rule) {
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: m.Queue, Lane: g, Ceiling: int64(n)}), rule, "lane_ceiling")
	m.SetCeiling(g, n)
	t.lanesAre(m, fmt.Sprintf("lane_ceiling %s %d", g, n), rule)
}

func (t *T) mPause(m *laneModel, g string, rule rules.Rule) {
	t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: m.Queue, Lane: g}), rule, "lane_pause")
	m.Pause(g)
	t.lanesAre(m, "lane_pause "+g, rule)
}

func (t *T) mResume(m *laneModel, g string, rule rules.Rule) {
	t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: m.Queue, Lane: g}), rule, "lane_resume")
	m.Resume(g)
	t.lanesAre(m, "lane_resume "+g, rule)
}

// scriptsRun names the bundle scripts the port ran since mark, resolving SHA1s through the map
// the wire law admits (the bundle's plus Config.Admit), so an admitted edit counts as its script.
func (t *T) scriptsRun(from int) map[string]bool {
	ran := map[string]bool{}
	for _, l := range t.portCommands(from) {
		if l.Cmd() == "EVALSHA" {
			if s, ok := t.law.scripts[argAt(l, 1)]; ok {
				ran[s.Name] = true
			}
		}
	}
	return ran
}

// orNull renders an optional reply field: its quoted value, or null.
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}
