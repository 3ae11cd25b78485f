package contracts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// portClients are the port's connections on the server (CLIENT LIST on every primary, the
// harness's own left out), each as its fields.
func (t *T) portClients() []map[string]string {
	var out []map[string]string
	for _, nd := range t.admin.Nodes { // every primary of a cluster: the wake key's owner holds the parked
		v, err := nd.C.Do(t.ctx, "CLIENT", "LIST")
		if err != nil {
			t.harness("CLIENT LIST on %s: %v", nd.Addr, err)
		}
		for _, l := range strings.Split(v.Text(), "\n") {
			f := map[string]string{}
			for _, kv := range strings.Fields(l) {
				k, v, _ := strings.Cut(kv, "=")
				f[k] = v
			}
			f["node"] = nd.Label // ids and addresses are a node's own
			if f["addr"] != "" && !t.isOwnAt(nd.Label, f["addr"]) {
				out = append(out, f)
			}
		}
	}
	return out
}

// waitBlocked waits until n of the port's connections are blocked in BLPOP (CLIENT LIST). The
// event that ends a wait is the park's: a park that returns first (its timeout_ms run out) never
// had its consumers parked; a slow machine only makes the wait longer. It returns the blocked
// lines, each as id@node.
func (t *T) waitBlocked(n int) (lines []string) {
	t.cover(rules.Park)
	for i := 0; ; i++ {
		lines = lines[:0]
		for _, f := range t.portClients() {
			if f["cmd"] == "blpop" && strings.Contains(f["flags"], "b") {
				lines = append(lines, f["id"]+"@"+f["node"])
			}
		}
		got := len(lines)
		if got >= n {
			return lines
		}
		// A port that polls never blocks: its claims pass C14's bound long before the park's
		// timeout_ms ends the wait (a park of 120 s held a polling port's kill for 120 s).
		if i%20 == 19 && t.parked.a.Consumers > 0 {
			if claims, limit := t.claimsPast(t.parked); claims > limit {
				t.fail(rules.Park, fmt.Sprintf("%d idle consumer(s) blocked in BLPOP on the wake key while the park runs, after at most %d claims (jobs + wakes + consumers): no polling", n, limit),
					fmt.Sprintf("%d blocked after %d claims (CLIENT LIST)", got, claims))
			}
		}
		select {
		case <-t.parking:
			t.fail(rules.Park, fmt.Sprintf("%d idle consumer(s) blocked in BLPOP on the wake key while the park runs", n), fmt.Sprintf("%d blocked when the park returned (CLIENT LIST)", got))
		case <-t.ctx.Done():
			t.harness("waiting for %d parked consumer(s): %v", n, t.ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// parkCall is a park sent in the background: its arguments and the wire's mark when it was sent.
type parkCall struct {
	a    protocol.ParkArgs
	from int
}

type parked struct {
	res       protocol.ParkResult
	err       error
	at        time.Time
	consumers int
	from      int // the wire's mark when the park was sent
}

// parkSent records a park about to be sent in the background: the channel its goroutine closes
// when the park has returned (the session is not closed under it) and the wire's mark, from
// which waitBlocked counts its claims.
func (t *T) parkSent(a protocol.ParkArgs) (finished chan struct{}, from int) {
	finished, from = make(chan struct{}), t.mark()
	t.parking, t.parked = finished, parkCall{a: a, from: from}
	return finished, from
}

// park runs the park op in the background.
func (t *T) park(a protocol.ParkArgs) <-chan parked {
	ch := make(chan parked, 1)
	finished, from := t.parkSent(a)
	go func() {
		defer t.recoverPanic()
		defer close(finished)
		r, err := t.D.Park(t.ctx, a)
		ch <- parked{r, err, time.Now(), a.Consumers, from}
	}()
	return ch
}

// idleWire checks that between from and now the port sent nothing but BLPOP on the wake key
// (and its minter upkeep).
func (t *T) idleWire(from int, wake string) {
	pops := map[string]int{} // per connection: a parked consumer re-issues its pop only on timeout
	t.cover(rules.Park)
	for _, l := range t.portCommands(from) {
		if l.Cmd() == "BLPOP" && argAt(l, 1) == wake && len(l.Args) == 3 {
			pops[l.Client]++
			t.check(pops[l.Client] == 1, rules.Park, "one blocking pop per parked connection while idle (the windows are shorter than park_ms)", "connection %s sent BLPOP %d times", l.Client, pops[l.Client])
			continue
		}
		t.fail(rules.Park, "an idle consumer sends nothing but one blocking pop on "+wake, "the port sent "+l.String())
	}
}

// noPolling bounds the claims a park made: every claim that found nothing must follow a wake
// (a BLPOP return) or be a consumer's first look. Any claiming script counts (claim, lane_claim,
// claim_batch), so a port cannot hide a poll behind another claim script. A claim counts when
// its script ran: an EVALSHA answered NOSCRIPT (a server whose script cache is still empty, as
// when the clause runs first) ran nothing and is sent again after SCRIPT LOAD (§5.3).
func (t *T) noPolling(from int, a protocol.ParkArgs) {
	claims, limit := t.claimsPast(parkCall{a: a, from: from})
	t.check(claims <= limit, rules.Park, fmt.Sprintf("at most %d claims (jobs %d + wakes %d + consumers %d): no polling", limit, a.Jobs, limit-a.Jobs-a.Consumers, a.Consumers), "%d claims", claims)
}

// claimsPast counts the claims the port ran since p was sent, and their bound: the park's jobs,
// its wakes (the BLPOPs sent so far) and one first look per consumer. The counts only grow, and a
// claim that follows a wake follows its BLPOP, so the bound holds at every moment, not only at
// the end.
func (t *T) claimsPast(p parkCall) (claims, limit int) {
	// By the scripts the port loaded, not the canon's SHA1s: a port running an edited claim
	// script still claims with it.
	claiming := func(sha string) bool {
		switch t.law.scripts[strings.ToLower(sha)].Name {
		case lua.Claim, lua.LaneClaim, lua.ClaimBatch:
			return true
		}
		return false
	}
	ran := map[int]bool{} // the EVALSHA lines whose script called the server
	for _, l := range t.portLines(p.from) {
		if l.Client == "lua" {
			ran[l.Script] = true
		}
	}
	pops := 0
	for _, l := range t.portCommands(p.from) {
		switch {
		case l.Cmd() == "EVALSHA" && claiming(argAt(l, 1)) && ran[l.Seq]:
			claims++
		case l.Cmd() == "BLPOP":
			pops++
		}
	}
	return claims, p.a.Jobs + pops + p.a.Consumers
}

// c14 is contract C14: park.
var c14 = Contract{ID: "C14", Name: "park",
	Rule: "an idle consumer sends nothing but one blocking pop on the wake key; an enqueue wakes it promptly; a burst wakes parked consumers one after another; the wake list never exceeds one",
	clauses: slices.Concat([]clause{
		{name: "park-at-its-maximum", body: parkAtItsMaximum},
		{name: "park-lease-past-a-duration", body: parkLeasePastADuration},
		{name: "park-answers-the-refusal", body: parkAnswersTheRefusal},
		{name: "park-lines-refused", body: parkLinesRefused},
		{name: "park-one-line-refused", body: parkOneLineRefused},
		{name: "park-answers-the-server-check", body: parkAnswersTheServerCheck, noHello: true, only: standaloneOnly},
		{name: "park-answers-a-hello-refusal", body: parkAnswersAHelloRefusal, noHello: true, only: standaloneOnly},
		{name: "park-lines-fall-silent", body: parkLinesFallSilent, noHello: true, only: standaloneOnly},
		{name: "server-falls-silent-under-a-park", body: serverFallsSilentUnderAPark, noHello: true, only: standaloneOnly},
		{name: "server-slow-then-silent-under-a-park", body: serverSlowThenSilentUnderAPark, noHello: true, only: standaloneOnly},
		{name: "park-line-quiet-while-its-worker-is-away", body: parkLineQuietWhileItsWorkerIsAway, noHello: true, only: standaloneOnly},
		{name: "woken-while-an-empty-claim-is-out", body: wokenWhileAnEmptyClaimIsOut, noHello: true, only: standaloneOnly},
		{name: "park-lines-redialled-until-they-connect", body: parkLinesRedialledUntilTheyConnect, noHello: true, only: standaloneOnly},
		fieldsClause(fieldGroup{[]string{"park"}, ownField}),
		{name: "idle-consumer-blocks-and-wakes-promptly", body: idleConsumerBlocksAndWakesPromptly},
		{name: "burst-wakes-parked-consumers", body: burstWakesParkedConsumers},
		{name: "claim-rearms-while-work-remains", body: claimRearmsWhileWorkRemains},
		{name: "woken-consumer-drains-first", body: wokenConsumerDrainsFirst},
		{name: "wake-never-exceeds-one", body: wakeNeverExceedsOne},
		{name: "park-connections-closed", body: parkConnectionsClosed},
		{name: "park-reports-every-completion", body: parkReportsEveryCompletion},
	}, wakeDutyClauses, parkingClauses),
}

func idleConsumerBlocksAndWakesPromptly(t *T) {
	q := t.q("orders")
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: workLease, ParkMS: 6000, TimeoutMS: 12000}
	done := t.park(a)
	t.waitBlocked(1)
	m := t.mark()
	time.Sleep(300 * time.Millisecond)
	t.idleWire(m, q.Wake())
	id := jobID(1 << 50)
	start := time.Now()
	t.kitEnqueue("orders", []string{id})
	r := <-done
	t.ok(r.err, rules.Park, "park")
	took := r.at.Sub(start)
	t.check(took < promptly(a), rules.Park, fmt.Sprintf("an enqueue wakes the parked consumer promptly (within %s, well before its %s pop times out)", promptly(a), time.Duration(a.ParkMS)*time.Millisecond), "park returned %s after the enqueue", took.Round(time.Millisecond))
	t.check(len(r.res.Jobs) == 1 && r.res.Jobs[0].ID == id && r.res.Jobs[0].Token == 1, rules.Park, "the woken consumer claimed and completed "+id, "%+v", r.res.Jobs)
	t.check(!t.exists(jobKey(q, id)), rules.Complete, "the job completed", "the row is still there")
	t.noPolling(m0, a)
	t.parkConnections(m0, q.Wake())
}

func burstWakesParkedConsumers(t *T) {
	q := t.q("orders")
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 3, Jobs: 6, LeaseMS: workLease, ParkMS: 8000, TimeoutMS: 16000}
	done := t.park(a)
	t.waitBlocked(3)
	m := t.mark()
	time.Sleep(200 * time.Millisecond)
	t.idleWire(m, q.Wake())
	ids := kitIDs(6, 1<<50)
	start := time.Now()
	t.kitEnqueue("orders", ids)
	t.completed(<-done, start, promptly(a), ids, "a burst wakes parked consumers one after another, before any pop times out")
	t.check(t.llen(q.Wake()) <= 1, rules.Wake, "the wake list never exceeds one", "length %d", t.llen(q.Wake()))
	t.noPolling(m0, a)
	t.parkConnections(m0, q.Wake())
}

func claimRearmsWhileWorkRemains(t *T) {
	q := t.q("orders")
	for i := range 3 {
		t.enqueue("orders", fmt.Sprint(i))
	}
	for i, want := range []int64{1, 1, 0} {
		t.do("DEL", q.Wake())
		t.mustClaim("orders", workLease)
		t.check(t.llen(q.Wake()) == want, rules.WakeClaimRearm, fmt.Sprintf("after claim %d of 3 the wake holds %d token(s) (re-armed while work remains)", i+1, want), "length %d", t.llen(q.Wake()))
	}
}

func wakeNeverExceedsOne(t *T) {
	q := t.q("orders")
	one := func(step string) {
		t.check(t.llen(q.Wake()) == 1, rules.WakeOne, step+": the wake list holds exactly one token", "length %d", t.llen(q.Wake()))
	}
	for i := range 3 {
		t.enqueue("orders", fmt.Sprint(i))
	}
	one("after three enqueues")
	t.laneEnqueue("orders", "east", "l")
	one("after a lane enqueue")
	c := t.mustClaim("orders", workLease) // the retry below must meet a live lease, however busy the machine
	one("after a claim with work remaining")
	_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", c.ID, c.Token), MaxAttempts: 5, Error: "x"})
	t.ok(err, rules.Retry, "retry")
	one("after a retry")
	c = t.mustClaim("orders", 100)
	deadline, _ := t.zscore(q.Active(), c.ID)
	t.waitPast(deadline)
	_, err = t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5})
	t.ok(err, rules.Reap, "reap")
	one("after a reap")
	t.wakeKeepsOne("burst")
	t.wakeKeepsOneBatch("batch")
}

// parkReportsEveryCompletion is C14's (B-294, B-301): every other park clause enqueues exactly
// the jobs the park asks for, so a port whose consumers went on claiming past jobs and cut its
// reply to jobs lost work unseen, and one whose consumers drained the queue until the park
// stopped them certified. Here a park of 4 consumers and 2 jobs runs over a backlog of 20: the
// consumers that held a claim when the second job completed may complete theirs, so the reply
// lists 2 to 5 jobs (B-301); every job gone from the keyspace must be in the reply, and every
// job in the reply gone. Checked once the park has answered, when its consumers have stopped: a
// correct port changes nothing after it.
func parkReportsEveryCompletion(t *T) {
	q := t.q("orders")
	backlog := kitIDs(20, 1<<50)
	t.kitEnqueue("orders", backlog)
	a := protocol.ParkArgs{Queue: "orders", Consumers: 4, Jobs: 2, LeaseMS: workLease, ParkMS: 1000, TimeoutMS: 20000}
	r := <-t.park(a)
	t.ok(r.err, rules.Park, "park of 4 consumers and 2 jobs over a backlog of 20")
	t.check(len(r.res.Jobs) >= a.Jobs, rules.Park, "the park completes at least its 2 jobs", "%+v", r.res.Jobs)
	most := a.Jobs + a.Consumers - 1
	t.check(len(r.res.Jobs) <= most, rules.ParkBounded, fmt.Sprintf("the park completes at most jobs + consumers − 1 = %d jobs", most), "%d: %+v", len(r.res.Jobs), r.res.Jobs)
	reported := map[string]bool{}
	for _, j := range r.res.Jobs {
		reported[j.ID] = true
		t.check(!t.exists(jobKey(q, j.ID)), rules.ParkReportsAll, fmt.Sprintf("job %s, in the park's reply, is completed", j.ID), "its row is still there")
	}
	var unreported []string
	for _, id := range backlog {
		if !reported[id] && !t.exists(jobKey(q, id)) {
			unreported = append(unreported, id)
		}
	}
	t.check(len(unreported) == 0, rules.ParkReportsAll, fmt.Sprintf("every job the park completed is in its reply (%d listed)", len(r.res.Jobs)),
		"completed and not listed: %v", unreported)
}
