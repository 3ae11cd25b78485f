package suite

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	. "github.com/onsi/ginkgo/v2"
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
	if strings.Join(sorted, ",") != strings.Join(want, ",") {
		t.fail(ruleLanes, fmt.Sprintf("%s: the ring holds exactly the serviceable lanes %v, each once", step, want), fmt.Sprintf("ring %v", ring))
	}
}

func c12(cfg *Config) {
	Describe("C12 rotate", Label("C12"), func() {
		clause(cfg, "C12", "C12/rotate/strict-rotation", clauseOpts{}, func(t *T) {
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
			for i := range 9 {
				head := t.list(t.q("orders").Ring())
				c := t.laneClaim("orders", 30000)
				if c == nil {
					t.fail(ruleLanes, fmt.Sprintf("lane claim %d of 9 returns a job", i+1), "an empty reply")
				}
				t.check(len(head) > 0 && c.Lane == head[0], ruleLanes, fmt.Sprintf("claim %d takes the lane at the ring's head %v", i+1, head), "it took lane %q", c.Lane)
				t.check(c.ID == jobs[c.Lane][next[c.Lane]], ruleLanes, "the lane's oldest id", "claim %d of lane %s got %s, want %s", i+1, c.Lane, c.ID, jobs[c.Lane][next[c.Lane]])
				next[c.Lane]++
				seq = append(seq, c.Lane)
				t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
			}
			for i := range seq {
				if seq[i] != seq[i%3] || (i < 3 && slices.Index(seq[:i], seq[i]) >= 0) {
					t.fail(ruleLanes, "claims rotate strictly: every lane once per round, in the same order", strings.Join(seq, " "))
				}
			}
			t.check(t.laneClaim("orders", 30000) == nil, ruleLanes, "an empty reply once every lane is drained", "a job")
		})
		clause(cfg, "C12", "C12/rotate/ring-equals-serviceable", clauseOpts{}, func(t *T) {
			lanes := []string{"east", "north"}
			t.laneEnqueue("orders", "east", "e1")
			t.ringIsServiceable("orders", lanes, "after the first enqueue")
			t.laneEnqueue("orders", "north", "n1")
			t.laneEnqueue("orders", "north", "n2")
			t.laneEnqueue("orders", "east", "e2")
			t.ringIsServiceable("orders", lanes, "after four enqueues into two lanes")
			for i := range 3 {
				t.laneClaim("orders", 30000)
				t.ringIsServiceable("orders", lanes, fmt.Sprintf("after lane claim %d", i+1))
			}
			t.laneEnqueue("orders", "east", "e3")
			t.ringIsServiceable("orders", lanes, "after an enqueue into a drained lane")
			t.laneClaim("orders", 30000)
			t.laneClaim("orders", 30000)
			t.ringIsServiceable("orders", lanes, "after draining both lanes")
			t.check(len(t.list(t.q("orders").Ring())) == 0, ruleLanes, "an empty ring once no lane has work", "%v", t.list(t.q("orders").Ring()))
		})
		clause(cfg, "C12", "C12/rotate/starvation-bounded", clauseOpts{}, func(t *T) {
			lanes := []string{"a", "b", "c", "d", "late"}
			for _, g := range lanes[:4] {
				for i := range 4 {
					t.laneEnqueue("orders", g, fmt.Sprint(g, i))
				}
			}
			t.laneClaim("orders", 30000)
			t.laneClaim("orders", 30000)
			late := t.laneEnqueue("orders", "late", "late")
			n := len(t.serviceable("orders", lanes))
			waited := 0
			for {
				c := t.laneClaim("orders", 30000)
				if c == nil {
					t.fail(ruleStarve, "the late lane is claimed", "the lanes ran dry first")
				}
				if c.ID == late {
					break
				}
				waited++
				if waited > n-1 {
					t.fail(ruleStarve, fmt.Sprintf("with %d serviceable lanes the late lane waits at most %d lane claims", n, n-1), fmt.Sprintf("it waited %d so far", waited))
				}
			}
		})
	})
}

func c13(cfg *Config) {
	Describe("C13 pause & limit", Label("C13"), func() {
		clause(cfg, "C13", "C13/pause-limit/paused-lane-keeps-backlog", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			lanes := []string{"east", "west"}
			e1 := t.laneEnqueue("orders", "east", "e1")
			t.laneEnqueue("orders", "east", "e2")
			t.laneEnqueue("orders", "west", "w1")
			t.laneEnqueue("orders", "west", "w2")
			t.ok(t.D.LanePause(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: "east"}), ruleLanes, "lane_pause")
			t.check(!slices.Contains(t.list(q.Ring()), "east"), ruleLanes, "a paused lane leaves the ring", "ring %v", t.list(q.Ring()))
			t.ringIsServiceable("orders", lanes, "after lane_pause east")
			for i := range 2 {
				c := t.laneClaim("orders", 30000)
				t.check(c != nil && c.Lane == "west", ruleLanes, "only the unpaused lane is claimed", "claim %d: %+v", i+1, c)
			}
			t.check(t.laneClaim("orders", 30000) == nil, ruleLanes, "an empty reply: the only lane with work is paused", "a job")
			n, _, _ := t.do("ZCARD", laneKey(q, "east"))
			t.check(n[0] == "2", ruleLanes, "the paused lane keeps its backlog of 2", "%s", n[0])
			t.ok(t.D.LaneResume(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: "east"}), ruleLanes, "lane_resume")
			t.ringIsServiceable("orders", lanes, "after lane_resume east")
			c := t.laneClaim("orders", 30000)
			t.check(c != nil && c.ID == e1, ruleLanes, "resume returns the lane: its oldest job next", "%+v", c)
		})
		clause(cfg, "C13", "C13/pause-limit/ceiling-reopens-on-complete", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			lanes := []string{"east"}
			ids := []string{t.laneEnqueue("orders", "east", "1"), t.laneEnqueue("orders", "east", "2"), t.laneEnqueue("orders", "east", "3")}
			t.ok(t.D.LaneCeiling(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 1}), ruleCeiling, "lane_ceiling")
			c1 := t.laneClaim("orders", 30000)
			t.check(c1 != nil && c1.ID == ids[0], ruleCeiling, "the first claim under ceiling 1", "%+v", c1)
			t.ringIsServiceable("orders", lanes, "with the lane at its ceiling")
			t.check(t.laneClaim("orders", 30000) == nil, ruleCeiling, "a lane at its ceiling answers empty", "a job")
			t.complete("orders", c1.ID, c1.Token)
			t.ringIsServiceable("orders", lanes, "after the complete that brings the lane below its ceiling")
			t.check(slices.Contains(t.list(q.Ring()), "east"), ruleCeiling, "the lane reopens on complete", "ring %v", t.list(q.Ring()))
			c2 := t.laneClaim("orders", 30000)
			t.check(c2 != nil && c2.ID == ids[1], ruleCeiling, "the lane's next job after the complete", "%+v", c2)
			t.ok(t.D.LaneCeiling(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: "east", Ceiling: 0}), ruleCeiling, "lane_ceiling 0")
			t.ringIsServiceable("orders", lanes, "after lane_ceiling 0 (no ceiling)")
			c3 := t.laneClaim("orders", 30000)
			t.check(c3 != nil && c3.ID == ids[2], ruleCeiling, "ceiling 0 removes the limit: a second job active at once", "%+v", c3)
		})
		clause(cfg, "C13", "C13/pause-limit/queue-pause-atomic-with-claim", clauseOpts{}, func(t *T) {
			plain := t.enqueue("orders", "plain")
			laned := t.laneEnqueue("orders", "east", "laned")
			t.ok(t.D.Pause(t.ctx, drivers.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
			before := t.snapshot()
			m := t.mark()
			t.check(t.claim("orders", 30000) == nil, ruleQueuePause, "claim on a paused queue answers empty", "a job")
			t.check(t.laneClaim("orders", 30000) == nil, ruleQueuePause, "lane_claim on a paused queue answers empty", "a job")
			d := diff(before, t.snapshot())
			t.check(d == "", ruleQueuePause, "paused claims change nothing (lane state and ring kept)", "%s", d)
			ran := map[string]bool{}
			for _, l := range t.portCommands(m) {
				if l.Cmd() == "EVALSHA" {
					ran[argAt(l, 1)] = true
				}
			}
			b := t.cfg.Bundle
			t.check(ran[b.MustScript(lua.Claim).SHA1] && ran[b.MustScript(lua.LaneClaim).SHA1], ruleQueuePause,
				"the pause is decided inside the claim scripts: both claim and lane_claim ran", "scripts run: %v", slices.Sorted(maps.Keys(ran)))
			t.ok(t.D.Resume(t.ctx, drivers.QueueArgs{Queue: "orders"}), ruleQueuePause, "resume")
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == plain, ruleQueuePause, "after resume the plain job", "%s", c.ID)
			lc := t.laneClaim("orders", 30000)
			t.check(lc != nil && lc.ID == laned, ruleQueuePause, "after resume the lane job", "%+v", lc)
			t.ringIsServiceable("orders", []string{"east"}, "after resume")
		})
	})
}

// blocked counts the port's connections blocked in BLPOP (CLIENT LIST), waiting up to 5 s for n.
func (t *T) waitBlocked(n int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := 0
		list, _, _ := t.do("CLIENT", "LIST")
		for _, l := range strings.Split(strings.Join(list, ""), "\n") {
			f := map[string]string{}
			for _, kv := range strings.Fields(l) {
				k, v, _ := strings.Cut(kv, "=")
				f[k] = v
			}
			if !t.isOwn(f["addr"]) && f["cmd"] == "blpop" && strings.Contains(f["flags"], "b") {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.fail(rulePark, fmt.Sprintf("%d idle consumer(s) blocked in BLPOP on the wake key", n), fmt.Sprintf("%d blocked after 5s (CLIENT LIST)", got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type parked struct {
	res drivers.ParkResult
	err error
	at  time.Time
}

// park runs the park op in the background.
func (t *T) park(a drivers.ParkArgs) <-chan parked {
	ch := make(chan parked, 1)
	finished := make(chan struct{})
	t.parking = finished
	go func() {
		defer GinkgoRecover()
		defer close(finished)
		r, err := t.D.Park(t.ctx, a)
		ch <- parked{r, err, time.Now()}
	}()
	return ch
}

// idleWire checks that between from and now the port sent nothing but BLPOP on the wake key
// (and its minter upkeep).
func (t *T) idleWire(from int, wake string) {
	pops := map[string]int{} // per connection: a parked consumer re-issues its pop only on timeout
	for _, l := range t.portCommands(from) {
		if l.Cmd() == "BLPOP" && argAt(l, 1) == wake && len(l.Args) == 3 {
			pops[l.Client]++
			t.check(pops[l.Client] == 1, rulePark, "one blocking pop per parked connection while idle (the windows are shorter than park_ms)", "connection %s sent BLPOP %d times", l.Client, pops[l.Client])
			continue
		}
		t.fail(rulePark, "an idle consumer sends nothing but one blocking pop on "+wake, "the port sent "+l.String())
	}
}

// noPolling bounds the claims a park made: every claim that found nothing must follow a wake
// (a BLPOP return) or be a consumer's first look. Any claiming script counts (claim, lane_claim,
// claim_batch), so a port cannot hide a poll behind another claim script.
func (t *T) noPolling(from int, a drivers.ParkArgs) {
	claiming := map[string]bool{}
	for _, name := range []string{lua.Claim, lua.LaneClaim, lua.ClaimBatch} {
		claiming[t.cfg.Bundle.MustScript(name).SHA1] = true
	}
	claims, pops := 0, 0
	for _, l := range t.portCommands(from) {
		switch {
		case l.Cmd() == "EVALSHA" && claiming[argAt(l, 1)]:
			claims++
		case l.Cmd() == "BLPOP":
			pops++
		}
	}
	limit := a.Jobs + pops + a.Consumers
	t.check(claims <= limit, rulePark, fmt.Sprintf("at most %d claims (jobs %d + wakes %d + consumers %d): no polling", limit, a.Jobs, pops, a.Consumers), "%d claims", claims)
}

func c14(cfg *Config) {
	Describe("C14 park", Label("C14"), func() {
		clause(cfg, "C14", "C14/park/idle-consumer-blocks-and-wakes-promptly", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			m0 := t.mark()
			a := drivers.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: 30000, ParkMS: 3000, TimeoutMS: 8000}
			done := t.park(a)
			t.waitBlocked(1)
			m := t.mark()
			time.Sleep(300 * time.Millisecond)
			t.idleWire(m, q.Wake())
			id := jobID(1 << 50)
			start := time.Now()
			t.kitEnqueue("orders", []string{id})
			r := <-done
			t.ok(r.err, rulePark, "park")
			took := r.at.Sub(start)
			t.check(took < 2*time.Second, rulePark, "an enqueue wakes the parked consumer promptly (well before its 3 s pop times out)", "park returned %s after the enqueue", took.Round(time.Millisecond))
			t.check(len(r.res.Jobs) == 1 && r.res.Jobs[0].ID == id && r.res.Jobs[0].Token == 1, rulePark, "the woken consumer claimed and completed "+id, "%+v", r.res.Jobs)
			t.check(!t.exists(jobKey(q, id)), ruleComplete, "the job completed", "the row is still there")
			t.noPolling(m0, a)
		})
		clause(cfg, "C14", "C14/park/burst-wakes-parked-consumers", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			m0 := t.mark()
			a := drivers.ParkArgs{Queue: "orders", Consumers: 3, Jobs: 6, LeaseMS: 30000, ParkMS: 4000, TimeoutMS: 10000}
			done := t.park(a)
			t.waitBlocked(3)
			m := t.mark()
			time.Sleep(200 * time.Millisecond)
			t.idleWire(m, q.Wake())
			ids := kitIDs(6, 1<<50)
			start := time.Now()
			t.kitEnqueue("orders", ids)
			r := <-done
			t.ok(r.err, rulePark, "park")
			took := r.at.Sub(start)
			t.check(took < 3*time.Second, rulePark, "a burst wakes parked consumers one after another, before any pop times out", "park returned %s after the burst", took.Round(time.Millisecond))
			var got []string
			for _, j := range r.res.Jobs {
				got = append(got, j.ID)
				t.check(j.Token == 1, rulePark, "each job claimed once, token 1", "%s token %d", j.ID, j.Token)
			}
			sort.Strings(got)
			t.check(strings.Join(got, ",") == strings.Join(ids, ","), rulePark, "all six jobs of the burst, each once", "%v", got)
			t.check(t.llen(q.Wake()) <= 1, ruleWake, "the wake list never exceeds one", "length %d", t.llen(q.Wake()))
			t.noPolling(m0, a)
		})
		clause(cfg, "C14", "C14/park/claim-rearms-while-work-remains", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			for i := range 3 {
				t.enqueue("orders", fmt.Sprint(i))
			}
			for i, want := range []int64{1, 1, 0} {
				t.do("DEL", q.Wake())
				t.mustClaim("orders", 30000)
				t.check(t.llen(q.Wake()) == want, ruleWake, fmt.Sprintf("after claim %d of 3 the wake holds %d token(s) (re-armed while work remains)", i+1, want), "length %d", t.llen(q.Wake()))
			}
		})
		clause(cfg, "C14", "C14/park/wake-never-exceeds-one", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			one := func(step string) {
				t.check(t.llen(q.Wake()) == 1, ruleWake, step+": the wake list holds exactly one token", "length %d", t.llen(q.Wake()))
			}
			for i := range 3 {
				t.enqueue("orders", fmt.Sprint(i))
			}
			one("after three enqueues")
			t.laneEnqueue("orders", "east", "l")
			one("after a lane enqueue")
			c := t.mustClaim("orders", 100)
			one("after a claim with work remaining")
			_, err := t.D.Retry(t.ctx, drivers.RetryArgs{FenceArgs: fa("orders", c.ID, c.Token), MaxAttempts: 5, Error: "x"})
			t.ok(err, ruleRetry, "retry")
			one("after a retry")
			c = t.mustClaim("orders", 100)
			deadline, _ := t.zscore(q.Active(), c.ID)
			t.waitPast(deadline)
			_, err = t.D.Reap(t.ctx, drivers.ReapArgs{Queue: "orders", MaxAttempts: 5})
			t.ok(err, ruleReap, "reap")
			one("after a reap")
		})
	})
}
