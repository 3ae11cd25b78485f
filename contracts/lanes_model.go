package contracts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/kit/protocol"
)

// laneModel is what canon §4 Lanes, A7 and A14 imply for the lane bookkeeping of one queue whose
// jobs all live in lanes: each lane's pending ids, its active count, ceiling and pause, laneof,
// the ring as an ordered list, every id's state, and (when a clause drains it first) the wake.
// Clauses apply each op to the model and to the port, then compare the whole lane keyspace.
type laneModel struct {
	q       string
	pending map[string][]string // lane → pending ids, oldest (lowest id) first
	active  map[string]int
	ceiling map[string]int
	paused  map[string]bool
	laneof  map[string]string // id → lane, for every live or dead lane job
	state   map[string]string // id → pending, active, scheduled, dead
	tokens  map[string]int64  // id → attempts
	payload map[string]string // id → payload bytes
	ring    []string
	wake    int // tokens the wake list must hold (checked only when watchWake)
	// watchWake: the clause empties the wake before the steps it checks, so its content is
	// the A13 duty of the last op.
	watchWake bool
	// wakeRule is the A13 duty the last op owes the wake (a rejoin's, or a claim's re-arm).
	wakeRule Rule
}

func newLaneModel(q string) *laneModel {
	return &laneModel{q: q, pending: map[string][]string{}, active: map[string]int{},
		ceiling: map[string]int{}, paused: map[string]bool{}, laneof: map[string]string{},
		state: map[string]string{}, tokens: map[string]int64{}, payload: map[string]string{}}
}

// serviceable is canon §4 Lanes: pending ids, not paused, below the ceiling (A7).
func (m *laneModel) serviceable(g string) bool {
	c, has := m.ceiling[g]
	return len(m.pending[g]) > 0 && !m.paused[g] && (!has || m.active[g] < c)
}

// fix is A14: a lane in the ring keeps its place, one that becomes serviceable is appended at
// the tail, one that stops is removed. It reports whether the lane joined.
func (m *laneModel) fix(g string) bool {
	at := slices.Index(m.ring, g)
	ok := m.serviceable(g)
	switch {
	case ok && at < 0:
		m.ring = append(m.ring, g)
		return true
	case !ok && at >= 0:
		m.ring = slices.Delete(m.ring, at, at+1)
	}
	return false
}

func (m *laneModel) arm() { m.wake = 1 }

// push puts an id into its lane's pending set (score 0: id order).
func (m *laneModel) push(id string) {
	g := m.laneof[id]
	m.pending[g] = append(m.pending[g], id)
	slices.Sort(m.pending[g])
	m.state[id] = "pending"
}

// release is A14's count: active:<g> − 1, gone at 0.
func (m *laneModel) release(id string) {
	g := m.laneof[id]
	if m.active[g]--; m.active[g] <= 0 {
		delete(m.active, g)
	}
}

func (m *laneModel) enqueue(id, g string, delayed bool) {
	m.laneof[id] = g
	if delayed {
		m.state[id] = "scheduled"
	} else {
		m.push(id)
		m.fix(g)
	}
	m.arm()
}

// claim is the rotating lane claim: head → tail, pop oldest, count active; "" when empty.
func (m *laneModel) claim() (g, id string) {
	if len(m.ring) == 0 {
		return "", ""
	}
	g = m.ring[0]
	m.ring = append(m.ring[1:], g)
	id, m.pending[g] = m.pending[g][0], m.pending[g][1:]
	m.active[g]++
	m.state[id] = "active"
	m.tokens[id]++
	m.fix(g)
	if len(m.ring) > 0 {
		m.arm()
	}
	return g, id
}

// leave takes an active id out of active: its lane's count drops and the lane may rejoin (A7).
func (m *laneModel) leave(id string) bool {
	m.release(id)
	return m.fix(m.laneof[id])
}

func (m *laneModel) complete(id string) {
	g := m.laneof[id]
	m.release(id)
	m.purge(id)
	if m.fix(g) {
		m.arm()
	}
}

// retry: dead at max (arming only on a rejoin), else back into the lane or scheduled, armed.
func (m *laneModel) retry(id string, dead, delayed bool) {
	m.release(id)
	switch {
	case dead:
		m.state[id] = "dead"
		if m.fix(m.laneof[id]) {
			m.arm()
		}
		return
	case delayed:
		m.state[id] = "scheduled"
	default:
		m.push(id)
	}
	m.fix(m.laneof[id])
	m.arm()
}

func (m *laneModel) fail(id string) {
	m.state[id] = "dead"
	if m.leave(id) {
		m.arm()
	}
}

// reap: expired ids, in deadline order, dead at max or back into their lane.
func (m *laneModel) reap(ids []string, max int64) {
	for _, id := range ids {
		m.release(id)
		if m.tokens[id] >= max {
			m.state[id] = "dead"
		} else {
			m.push(id)
			m.arm()
		}
		if m.fix(m.laneof[id]) {
			m.arm()
		}
	}
}

// promote and revive return a scheduled or dead id into its lane, armed.
func (m *laneModel) back(id string) {
	m.push(id)
	m.fix(m.laneof[id])
	m.arm()
}

func (m *laneModel) purge(id string) {
	delete(m.laneof, id)
	delete(m.state, id)
	delete(m.tokens, id)
	delete(m.payload, id)
}

func (m *laneModel) setCeiling(g string, n int) {
	if n == 0 {
		delete(m.ceiling, g)
	} else {
		m.ceiling[g] = n
	}
	if m.fix(g) {
		m.arm()
	}
}

func (m *laneModel) pause(g string) {
	m.paused[g] = true
	m.fix(g)
}

func (m *laneModel) resume(g string) {
	delete(m.paused, g)
	if m.fix(g) {
		m.arm()
	}
}

// ids lists the model's ids in a state, sorted.
func (m *laneModel) ids(state string) []string {
	var out []string
	for id, s := range m.state {
		if s == state {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// lanesHash is the lanes hash the model implies.
func (m *laneModel) lanesHash() map[string]string {
	h := map[string]string{}
	for g, n := range m.active {
		h["active:"+g] = strconv.Itoa(n)
	}
	for g, n := range m.ceiling {
		h["ceiling:"+g] = strconv.Itoa(n)
	}
	for g := range m.paused {
		h["paused:"+g] = "1"
	}
	return h
}

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
func (t *T) lanesAre(m *laneModel, step string, rule Rule) {
	q := t.q(m.q)
	t.cover(rule)
	where := func(what string) string { return step + ": " + what }
	for _, k := range t.allKeys() {
		g, ok := strings.CutPrefix(k, q.Prefix()+"lane:")
		if ok && len(m.pending[g]) == 0 {
			t.fail(rule, where("lane "+g+" has no pending ids, so no lane key"), fmt.Sprintf("%s holds %v", k, t.zsetMembers(k)))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(m.pending)) {
		ms, sc := t.zset(laneKey(q, g))
		t.check(slices.Equal(ms, m.pending[g]), rule, where(fmt.Sprintf("lane %s holds exactly %v, oldest first", g, m.pending[g])), "%v", ms)
		for _, id := range ms {
			t.check(sc[id] == 0, rule, where("lane ids are scored 0"), "%s scored %d", id, sc[id])
		}
	}
	pend, _ := t.zset(q.Pending())
	t.check(len(pend) == 0, rule, where("lane jobs never enter the plain pending set"), "pending %v", pend)
	for _, set := range []struct{ key, state string }{{q.Active(), "active"}, {q.Scheduled(), "scheduled"}, {q.Dead(), "dead"}} {
		got, _ := t.zset(set.key)
		slices.Sort(got)
		want := m.ids(set.state)
		t.check(slices.Equal(got, want), rule, where(fmt.Sprintf("%s holds exactly %v", set.state, want)), "%v", got)
	}
	for _, id := range slices.Sorted(maps.Keys(m.state)) {
		row := render(t.hash(jobKey(q, id)))
		want := render(map[string]string{"state": m.state[id], "attempts": fmt.Sprint(m.tokens[id]), "payload": m.payload[id]})
		t.check(row == want, rule, where(fmt.Sprintf("job %s's row is exactly %q", id, want)), "%q", row)
	}
	h := t.hash(q.Lanes())
	t.cover(ruleActiveZero)
	for f, v := range h {
		if strings.HasPrefix(f, "active:") && v == "0" {
			t.fail(ruleActiveZero, where("no active:<g> field at 0 (deleted when it reaches 0)"), f+" = 0")
		}
	}
	lanes, want := render(h), render(m.lanesHash())
	t.check(lanes == want, rule, where("the lanes hash is exactly "+want+" (active:<g> deleted at 0, A14)"), "%s", lanes)
	laneof, wantOf := render(t.hash(q.LaneOf())), render(m.laneof)
	t.check(laneof == wantOf, rule, where("laneof is exactly "+wantOf), "%s", laneof)
	ring := t.list(q.Ring())
	t.check(slices.Equal(ring, m.ring), rule, where(fmt.Sprintf("the ring is exactly %v, in that order (A14: a lane keeps its place, rejoins at the tail)", m.ring)), "%v", ring)
	if m.watchWake {
		n := t.llen(q.Wake())
		wr := cmp.Or(m.wakeRule, ruleRejoinWake)
		m.wakeRule = Rule{}
		t.check(n == int64(m.wake), wr, where(fmt.Sprintf("the wake holds %d token(s) (A13)", m.wake)), "%d", n)
	}
}

func (t *T) zsetMembers(k string) []string { ms, _ := t.zset(k); return ms }

// drainWake empties the wake so the next op's A13 duty can be observed.
func (t *T) drainWake(m *laneModel) {
	t.do("DEL", t.q(m.q).Wake())
	m.wake = 0
}

// Lane ops applied to the port and to the model alike; each checks the reply and then the
// whole lane keyspace under rule.

func (t *T) mEnqueue(m *laneModel, g, payload string, delay int64, rule Rule) string {
	payload += "\x00\x80\xfe\xff" // bytes that are not UTF-8 must survive every lane transition
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: m.q, Lane: g, PayloadB64: b64(payload), DelayMS: delay})
	m.payload[id] = payload
	m.enqueue(id, g, delay > 0)
	t.lanesAre(m, fmt.Sprintf("lane_enqueue %s into %s (delay %d)", id, g, delay), rule)
	return id
}

// mClaim lane-claims and checks the reply is the model's (lane at the ring's head, its oldest
// id); it returns the claimed id, "" when the model says empty.
func (t *T) mClaim(m *laneModel, lease int64, rule Rule) string {
	wantG, wantID := m.claim()
	m.wakeRule = ruleClaimRearm
	before := t.now()
	c := t.laneClaim(m.q, lease)
	after := t.now()
	if wantID == "" {
		t.check(c == nil, rule, "lane_claim answers empty: no lane is serviceable", "%+v", c)
		t.lanesAre(m, "an empty lane_claim", rule)
		return ""
	}
	if c == nil {
		t.fail(rule, fmt.Sprintf("lane_claim takes %s from lane %s (the ring's head)", wantID, wantG), "an empty reply")
	}
	t.check(c.ID == wantID && c.Lane == wantG && c.Token == m.tokens[wantID], rule,
		fmt.Sprintf("lane_claim takes %s (attempt %d) from lane %s, the ring's head", wantID, m.tokens[wantID], wantG),
		"%s (attempt %d) from lane %s", c.ID, c.Token, c.Lane)
	t.check(c.PayloadB64 == b64(m.payload[wantID]), ruleClaim, "lane_claim replies the enqueued payload bytes", "%q", unb64(c.PayloadB64))
	t.check(c.CheckpointB64 == nil, ruleCheckpoint, "no checkpoint was saved: the reply's checkpoint is null (A3)", "checkpoint_b64 %s", orNull(c.CheckpointB64))
	t.leaseWithin(t.q(m.q).Active(), wantID, before, after, lease, ruleClaim)
	t.lanesAre(m, "lane_claim of "+wantID, rule)
	return wantID
}

func (t *T) mComplete(m *laneModel, id string, rule Rule) {
	t.complete(m.q, id, m.tokens[id])
	m.complete(id)
	t.lanesAre(m, "complete "+id, rule)
}

func (t *T) mRetry(m *laneModel, id string, max, delay int64, rule Rule) {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(m.q, id, m.tokens[id]), MaxAttempts: max, DelayMS: delay, Error: "boom"})
	t.ok(err, ruleRetry, "retry with the live token")
	dead := m.tokens[id] >= max
	want := map[bool]string{true: "dead", false: "retried"}[dead]
	t.check(r.Outcome == want, ruleRetry, "retry answers "+want, "%q", r.Outcome)
	m.retry(id, dead, delay > 0)
	t.lanesAre(m, fmt.Sprintf("retry %s (max %d, delay %d)", id, max, delay), rule)
}

func (t *T) mFail(m *laneModel, id string, rule Rule) {
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa(m.q, id, m.tokens[id]), Error: "broken"}), ruleFail, "fail with the live token")
	m.fail(id)
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
func (t *T) mReap(m *laneModel, ids []string, max int64, rule Rule) {
	ids, last := t.byScore(t.q(m.q).Active(), ids)
	t.waitPast(last)
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: m.q, MaxAttempts: max, Limit: 100})
	t.ok(err, ruleReap, "reap")
	t.check(r.Count == int64(len(ids)), ruleReap, fmt.Sprintf("reap answers %d", len(ids)), "%d", r.Count)
	m.reap(ids, max)
	t.lanesAre(m, fmt.Sprintf("reap of %v (max %d)", ids, max), rule)
}

// mPromote waits until ids are due, then promotes them (they return in due order).
func (t *T) mPromote(m *laneModel, ids []string, rule Rule) {
	ids, last := t.byScore(t.q(m.q).Scheduled(), ids)
	t.waitPast(last)
	r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: m.q, Limit: 100})
	t.ok(err, rulePromote, "promote")
	t.check(r.Count == int64(len(ids)), rulePromote, fmt.Sprintf("promote answers %d", len(ids)), "%d", r.Count)
	for _, id := range ids {
		m.back(id)
	}
	t.lanesAre(m, fmt.Sprintf("promote of %v", ids), rule)
}

func (t *T) mRevive(m *laneModel, id string, rule Rule) {
	r, err := t.D.Revive(t.ctx, protocol.JobArgs{Queue: m.q, ID: id})
	t.ok(err, ruleMorgue, "revive")
	t.check(r.Changed, ruleMorgue, "revive of a dead job answers changed", "%+v", r)
	m.back(id)
	t.lanesAre(m, "revive "+id, rule)
}

func (t *T) mPurge(m *laneModel, id string, rule Rule) {
	r, err := t.D.Purge(t.ctx, protocol.JobArgs{Queue: m.q, ID: id})
	t.ok(err, ruleMorgue, "purge")
	t.check(r.Changed, ruleMorgue, "purge of a dead job answers changed", "%+v", r)
	m.purge(id)
	t.lanesAre(m, "purge "+id, rule)
}

func (t *T) mCeiling(m *laneModel, g string, n int, rule Rule) {
	t.ok(t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: m.q, Lane: g, Ceiling: int64(n)}), rule, "lane_ceiling")
	m.setCeiling(g, n)
	t.lanesAre(m, fmt.Sprintf("lane_ceiling %s %d", g, n), rule)
}

func (t *T) mPause(m *laneModel, g string, rule Rule) {
	t.ok(t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: m.q, Lane: g}), rule, "lane_pause")
	m.pause(g)
	t.lanesAre(m, "lane_pause "+g, rule)
}

func (t *T) mResume(m *laneModel, g string, rule Rule) {
	t.ok(t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: m.q, Lane: g}), rule, "lane_resume")
	m.resume(g)
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
