package contracts

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// serviceable computes, from the keyspace, the lanes the ring must hold: pending ids, not
// paused, below the ceiling (canon §4 Lanes, A7).
func (t *T) serviceable(qn string, lanes []string) []string {
	q := t.q(qn)
	h := t.hash(q.Lanes())
	var out []string
	for _, g := range lanes {
		n, _, _ := t.do("ZCARD", laneKey(q, g))
		if n[0] == "0" || h["paused:"+g] == "1" {
			continue
		}
		var ceiling, active int64
		fmt.Sscan(h["ceiling:"+g], &ceiling)
		fmt.Sscan(h["active:"+g], &active)
		if ceiling > 0 && active >= ceiling {
			continue
		}
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// ringIsServiceable checks that the ring holds exactly the serviceable lanes, each once.
func (t *T) ringIsServiceable(qn string, lanes []string, step string) {
	ring := t.list(t.q(qn).Ring())
	sorted := append([]string(nil), ring...)
	sort.Strings(sorted)
	want := t.serviceable(qn, lanes)
	t.cover(rules.Lanes)
	if strings.Join(sorted, ",") != strings.Join(want, ",") {
		t.fail(rules.Lanes, fmt.Sprintf("%s: the ring holds exactly the serviceable lanes %v, each once", step, want), fmt.Sprintf("ring %v", ring))
	}
}

// c12 is contract C12: rotate.
var c12 = Contract{ID: "C12", Name: "rotate",
	Rule: "lane claims rotate strictly across serviceable lanes; after every step the ring equals the serviceable set; starvation ≤ N−1",
	clauses: []clause{
		fieldsClause(fieldGroup{[]string{"lane_claim"}, ownField}),
		{name: "strict-rotation", body: strictRotation},
		{name: "ring-equals-serviceable", body: ringEqualsServiceable},
		{name: "lane-job-every-transition", body: laneTransitions},
		{name: "ring-order-as-list", body: ringOrder},
		{name: "churn-fairness", body: churnFairness},
		{name: "lane-and-plain-apart", body: laneAndPlainApart},
		{name: "starvation-bounded", body: starvationBounded},
		{name: "walk-lanes", body: walkLanes.body},
	},
}

func strictRotation(t *T) {
	lanes := []string{"east", "north", "west"}
	jobs := map[string][]string{}
	for i := range 3 {
		for _, g := range lanes {
			jobs[g] = append(jobs[g], t.laneEnqueue("orders", g, fmt.Sprintf("%s-%d", g, i)))
		}
	}
	t.ringIsServiceable("orders", lanes, "after the enqueues")
	var seq []string
	next := map[string]int{}
	t.cover(rules.Lanes)
	for i := range 9 {
		head := t.list(t.q("orders").Ring())
		c := t.laneClaim("orders", workLease)
		if c == nil {
			t.fail(rules.Lanes, fmt.Sprintf("lane claim %d of 9 returns a job", i+1), "an empty reply")
		}
		t.check(len(head) > 0 && c.Lane == head[0], rules.Lanes, fmt.Sprintf("claim %d takes the lane at the ring's head %v", i+1, head), "it took lane %q", c.Lane)
		t.check(c.ID == jobs[c.Lane][next[c.Lane]], rules.Lanes, "the lane's oldest id", "claim %d of lane %s got %s, want %s", i+1, c.Lane, c.ID, jobs[c.Lane][next[c.Lane]])
		next[c.Lane]++
		seq = append(seq, c.Lane)
		t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
	}
	t.cover(rules.Lanes)
	for i := range seq {
		if seq[i] != seq[i%3] || (i < 3 && slices.Index(seq[:i], seq[i]) >= 0) {
			t.fail(rules.Lanes, "claims rotate strictly: every lane once per round, in the same order", strings.Join(seq, " "))
		}
	}
	t.check(t.laneClaim("orders", workLease) == nil, rules.Lanes, "an empty reply once every lane is drained", "a job")
}

func ringEqualsServiceable(t *T) {
	lanes := []string{"east", "north"}
	t.laneEnqueue("orders", "east", "e1")
	t.ringIsServiceable("orders", lanes, "after the first enqueue")
	t.laneEnqueue("orders", "north", "n1")
	t.laneEnqueue("orders", "north", "n2")
	t.laneEnqueue("orders", "east", "e2")
	t.ringIsServiceable("orders", lanes, "after four enqueues into two lanes")
	for i := range 3 {
		t.laneClaim("orders", workLease)
		t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
	}
	t.laneEnqueue("orders", "east", "e3")
	t.ringIsServiceable("orders", lanes, "after an enqueue into a drained lane")
	t.laneClaim("orders", workLease)
	t.laneClaim("orders", workLease)
	t.ringIsServiceable("orders", lanes, "after draining both lanes")
	t.check(len(t.list(t.q("orders").Ring())) == 0, rules.Lanes, "an empty ring once no lane has work", "%v", t.list(t.q("orders").Ring()))
}

func starvationBounded(t *T) {
	lanes := []string{"a", "b", "c", "d", "late"}
	for _, g := range lanes[:4] {
		for i := range 4 {
			t.laneEnqueue("orders", g, fmt.Sprint(g, i))
		}
	}
	t.laneClaim("orders", workLease)
	t.laneClaim("orders", workLease)
	late := t.laneEnqueue("orders", "late", "late")
	n := len(t.serviceable("orders", lanes))
	waited := 0
	t.cover(rules.Starve)
	for {
		c := t.laneClaim("orders", workLease)
		if c == nil {
			t.fail(rules.Starve, "the late lane is claimed", "the lanes ran dry first")
		}
		if c.ID == late {
			break
		}
		waited++
		if waited > n-1 {
			t.fail(rules.Starve, fmt.Sprintf("with %d serviceable lanes the late lane waits at most %d lane claims", n, n-1), fmt.Sprintf("it waited %d so far", waited))
		}
	}
}

// laneTransitions takes lane jobs through every transition — retry into the lane and via
// scheduled+promote, fail → dead → revive, reap back and reap to dead at max, purge, complete —
// with a ceiling and a lane pause in force at times, comparing the whole lane keyspace (lane
// sets, lanes hash, laneof, ring as a list, rows) with the model after every step.
func laneTransitions(t *T) {
	m := newLaneModel("orders")
	for i := range 3 {
		t.mEnqueue(m, "east", fmt.Sprint("e", i), 0, map[bool]rules.Rule{true: rules.RingTail, false: rules.RingPlace}[i == 0])
	}
	t.mEnqueue(m, "west", "w0", 0, rules.RingTail)
	t.mEnqueue(m, "west", "w1", 0, rules.RingPlace)

	x := t.mClaim(m, workLease, rules.LaneCount)
	t.mRetry(m, x, 5, 0, rules.LaneRetry)
	x = t.mClaim(m, workLease, rules.LaneCount)
	t.mRetry(m, x, 5, 60, rules.LaneRetry)
	late := t.mEnqueue(m, "north", "late", 40, rules.LanePromote) // a delayed lane enqueue
	held := t.mClaim(m, workLease, rules.LaneCount)
	t.mPromote(m, []string{x, late}, rules.LanePromote) // both lanes rejoin, in due order

	t.mCeiling(m, "east", 1, rules.Lanes)
	x = t.mClaim(m, workLease, rules.LaneCount)
	t.mFail(m, x, rules.LaneFail)
	t.mRevive(m, x, rules.LaneRevive)
	t.mComplete(m, held, rules.LaneComplete) // east below its ceiling again: it rejoins

	t.mPause(m, "west", rules.Lanes)
	var short []string // claim until every lane is paused, drained or at its ceiling
	for x := t.mClaim(m, 100, rules.LaneCount); x != ""; x = t.mClaim(m, 100, rules.LaneCount) {
		short = append(short, x)
	}
	t.mReap(m, short, 5, rules.LaneReap)
	t.mResume(m, "west", rules.Lanes)

	x = t.mClaim(m, 60, rules.LaneCount)
	t.mReap(m, []string{x}, m.Tokens[x], rules.LaneReap)
	t.mPurge(m, x, rules.LanePurge)

	t.mCeiling(m, "east", 0, rules.Lanes)
	for range 12 {
		if x = t.mClaim(m, workLease, rules.LaneCount); x == "" {
			break
		}
		t.mComplete(m, x, rules.LaneComplete)
	}
	t.check(len(m.LaneOf) == 0, rules.Lanes, "every lane job retired", "%v left", m.LaneOf)
}

// ringOrder compares the ring as a list: an enqueue into a lane in the ring keeps its place, a
// drained lane leaves and rejoins at the tail on an enqueue, a retry, a revive.
func ringOrder(t *T) {
	m := newLaneModel("orders")
	for _, g := range []string{"a", "b", "c"} {
		t.mEnqueue(m, g, g+"1", 0, rules.RingTail)
	}
	t.mEnqueue(m, "b", "b2", 0, rules.RingPlace)
	t.mEnqueue(m, "a", "a2", 0, rules.RingPlace)
	a1 := t.mClaim(m, workLease, rules.Lanes) // [b c a]
	b1 := t.mClaim(m, workLease, rules.Lanes) // [c a b]
	c1 := t.mClaim(m, workLease, rules.Lanes) // c drained: [a b]
	t.mEnqueue(m, "a", "a3", 0, rules.RingPlace)
	t.mRetry(m, c1, 5, 0, rules.RingTail) // c rejoins: [a b c]
	t.mComplete(m, a1, rules.RingPlace)
	t.mFail(m, b1, rules.RingPlace)
	for range 3 {
		x := t.mClaim(m, workLease, rules.Lanes)
		t.mComplete(m, x, rules.RingPlace)
	}
	t.mRevive(m, b1, rules.RingTail) // b held b2 … order decided by the model
	t.mEnqueue(m, "c", "c2", 0, rules.RingTail)
	var short []string // drain every lane under short leases: the reap returns them in deadline order
	for {
		x := t.mClaim(m, 100, rules.Lanes)
		if x == "" {
			break
		}
		short = append(short, x)
	}
	t.mEnqueue(m, "d", "d1", 0, rules.RingTail)
	t.mReap(m, short, 5, rules.RingTail)
	for {
		x := t.mClaim(m, workLease, rules.Lanes)
		if x == "" {
			break
		}
		t.mComplete(m, x, rules.ActiveZero)
	}
}

// churnFairness bounds every waiting lane's wait while one lane drains and refills over and
// over (by enqueue and by retry): each lane with work is claimed within N−1 claims of others.
func churnFairness(t *T) {
	m := newLaneModel("orders")
	// lane names span the alphabet and its 64-byte bound: a port must not mangle them
	lanes := []string{"hot", "w.1", "w_2", "w3-" + strings.Repeat("z", 61)}
	for _, g := range lanes[1:] {
		for i := range 4 {
			t.mEnqueue(m, g, fmt.Sprint(g, "-", i), 0, rules.Churn)
		}
	}
	t.mEnqueue(m, "hot", "hot-0", 0, rules.Churn)
	waited, refills := map[string]int{}, 0
	t.cover(rules.Churn)
	for i := range 14 {
		x := t.mClaim(m, workLease, rules.Churn)
		if x == "" {
			break
		}
		g := m.LaneOf[x]
		for _, o := range lanes {
			if o == g || len(m.Pending[o]) == 0 && o != "hot" {
				waited[o] = 0
				continue
			}
			if waited[o]++; waited[o] > len(lanes)-1 {
				t.fail(rules.Churn, fmt.Sprintf("with %d lanes a lane with work waits at most %d lane claims", len(lanes), len(lanes)-1),
					fmt.Sprintf("lane %s waited %d (claim %d took %s from %s)", o, waited[o], i+1, x, g))
			}
		}
		waited[g] = 0
		switch {
		case g != "hot":
			t.mComplete(m, x, rules.Churn)
		case refills%2 == 0:
			refills++
			t.mRetry(m, x, 100, 0, rules.Churn) // the hot lane refills by retry
		default:
			refills++
			t.mComplete(m, x, rules.Churn)
			t.mEnqueue(m, "hot", fmt.Sprint("hot-", i), 0, rules.Churn) // … or by enqueue
		}
	}
}

// laneAndPlainApart: on a queue holding plain and lane jobs, lane_claim takes only lane jobs and
// claim only plain ones, each answering empty while the other kind waits; each claim re-arms the
// wake while either kind remains, and an empty one never arms (canon §4 Lanes, A13).
func laneAndPlainApart(t *T) {
	q := t.q("orders")
	wake := func(want int64, after string) {
		n := t.llen(q.Wake())
		t.check(n == want, rules.ClaimRearm, fmt.Sprintf("after %s the wake holds %d token(s)", after, want), "%d", n)
		t.do("DEL", q.Wake())
	}
	p1, p2 := t.enqueue("orders", "p1"), t.enqueue("orders", "p2")
	a1, b1 := t.laneEnqueue("orders", "a", "a1"), t.laneEnqueue("orders", "b", "b1")
	t.do("DEL", q.Wake())
	var done []*protocol.ClaimResult
	for i, want := range []string{a1, b1} {
		c := t.laneClaim("orders", workLease)
		t.check(c != nil && c.ID == want, rules.Lanes, fmt.Sprintf("lane claim %d takes lane job %s", i+1, want), "%+v", c)
		done = append(done, c)
		wake(1, fmt.Sprintf("lane claim %d (lane or plain work remains)", i+1))
	}
	c := t.laneClaim("orders", workLease)
	t.check(c == nil, rules.Lanes, "lane_claim answers empty with no lane serviceable, plain jobs pending or not", "it took %+v", c)
	pend, _ := t.zset(q.Pending())
	t.check(slices.Equal(pend, []string{p1, p2}), rules.Lanes, fmt.Sprintf("plain pending untouched by lane claims: %v", []string{p1, p2}), "%v", pend)
	wake(0, "an empty lane claim")
	c1 := t.laneEnqueue("orders", "c", "c1")
	t.do("DEL", q.Wake())
	for i, want := range []string{p1, p2} {
		c := t.claim("orders", workLease)
		t.check(c != nil && c.ID == want && c.Lane == "", rules.Claim, fmt.Sprintf("claim %d takes plain job %s", i+1, want), "%+v", c)
		done = append(done, c)
		wake(1, fmt.Sprintf("plain claim %d (plain or lane work remains)", i+1))
	}
	c = t.claim("orders", workLease)
	t.check(c == nil, rules.Claim, "claim answers empty with no plain job pending, lanes full or not", "it took %+v", c)
	lane, _ := t.zset(laneKey(q, "c"))
	t.check(slices.Equal(lane, []string{c1}) && slices.Equal(t.list(q.Ring()), []string{"c"}), rules.Lanes,
		"lane c and the ring untouched by plain claims", "lane c %v, ring %v", lane, t.list(q.Ring()))
	wake(0, "an empty claim")
	for _, d := range done {
		t.complete("orders", d.ID, d.Token)
	}
}
