package contracts

import (
	"fmt"
	"github.com/echomq/kit/contracts/internal/chop"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// repops is how many pops each parked connection must send again in an idle window: the first
// is the timed-out pop parking again, the rest show it does so every time.
const repops = 3

// idleWindow checks the port's wire between from (taken at since) and now, a window in which its
// consumers sat parked with pops of parkMS: nothing but BLPOP on the wake key, and per
// connection at least repops pops (waitRepops waited for them) and no more than the window holds
// timeouts (plus the one in flight). A claim in the window is a poll: a pop that timed out must
// park again without claiming (A10).
func (t *T) idleWindow(from int, since time.Time, wake string, consumers int, park time.Duration) {
	pops := map[string]int{}
	t.cover(rules.Park)
	lines := t.portCommands(from)
	window := time.Since(since) // measured after the capture caught up: every counted pop is inside it
	for _, l := range lines {
		if l.Cmd() == "BLPOP" && argAt(l, 1) == wake && len(l.Args) == 3 {
			pops[l.Client]++
			secs, err := strconv.ParseFloat(argAt(l, 2), 64)
			t.check(err == nil && secs > 0 && secs <= park.Seconds()+0.001, rules.Park, fmt.Sprintf("each pop times out after park_ms (%s; 0 would block forever)", park), "BLPOP timeout %q", argAt(l, 2))
			continue
		}
		t.fail(rules.Park, fmt.Sprintf("over %s of idleness (pops of %s) a parked consumer sends nothing but BLPOP on %s: a timed-out pop parks again without claiming", window.Round(time.Millisecond), park, wake),
			"the port sent "+l.String())
	}
	// The server ends a pop no sooner than its timeout, so a window holds at most one pop per
	// timeout on each connection, however slow the machine; how many at least depends on the
	// machine's speed, so the lower bound is an event the harness waited for, not a count.
	most := int(window/park) + 1
	t.check(len(pops) == consumers, rules.Park, fmt.Sprintf("each of the %d parked consumers pops again on its own connection after its pops time out", consumers), "BLPOP from %d connection(s) in %s", len(pops), window.Round(time.Millisecond))
	for c, n := range pops {
		t.check(n <= most && n >= repops, rules.Park, fmt.Sprintf("%d to %d pops per parked connection in %s with pops of %s (one per timeout)", repops, most, window.Round(time.Millisecond), park), "connection %s sent BLPOP %d times", c, n)
	}
}

// waitRepops waits until consumers connections of the port have each sent repops BLPOPs since
// from, or the park has returned (idleWindow then reports what the wire holds).
func (t *T) waitRepops(from, consumers int) {
	for {
		pops := map[string]int{}
		for _, l := range t.portCommands(from) {
			if l.Cmd() == "BLPOP" {
				pops[l.Client]++
			}
		}
		enough := 0
		for _, n := range pops {
			if n >= repops {
				enough++
			}
		}
		if enough >= consumers {
			return
		}
		select {
		case <-t.parking:
			return
		case <-t.ctx.Done():
			t.harness("waiting for the parked consumers to pop again: %v", t.ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// completed checks that a park returned without error, promptly after start, with exactly ids
// (each once, token 1).
func (t *T) completed(r parked, start time.Time, within time.Duration, ids []string, why string) {
	t.ok(r.err, rules.Park, "park")
	took := r.at.Sub(start)
	t.check(took < within, rules.Park, fmt.Sprintf("%s: the park returns within %s", why, within), "it returned after %s with %d of %d jobs", took.Round(time.Millisecond), len(r.res.Jobs), len(ids))
	var got []string
	for _, j := range r.res.Jobs {
		got = append(got, j.ID)
		t.check(j.Token == 1, rules.Park, "each job claimed once, token 1", "%s token %d", j.ID, j.Token)
		t.check(j.Consumer >= 0 && j.Consumer < r.consumers, rules.ParkConsumer,
			fmt.Sprintf("each job names the consumer that completed it, 0..%d", r.consumers-1), "%s by consumer %d", j.ID, j.Consumer)
	}
	t.completionOrder(r.from, got)
	sort.Strings(got)
	t.check(strings.Join(got, ",") == strings.Join(ids, ","), rules.Park, fmt.Sprintf("all %d jobs, each once", len(ids)), "%v", got)
}

// promptly is how soon a park whose consumers a wake (or a claim first) must set going returns:
// half its pop timeout. A consumer left to its pop's timeout (a lost wake, a claim only after a
// timeout) comes later; a busy machine's delays, some milliseconds, come far sooner.
func promptly(a protocol.ParkArgs) time.Duration {
	return time.Duration(a.ParkMS) * time.Millisecond / 2
}

// completionOrder checks that a park's reply lists its jobs (got) in completion order. A port
// learns of completions on different connections as their replies arrive, not in the server's
// order, and how far apart those two orders drift depends on the machine's load; so only an
// order that no load explains fails: a job listed before one whose completion the server ran
// before the job was even enqueued (its claim and its complete, two round trips, came later).
func (t *T) completionOrder(from int, got []string) {
	at, enq := t.completions(from), t.enqueues()
	for i, a := range got {
		ea, ok := enq[a]
		if !ok {
			continue
		}
		for _, b := range got[i+1:] {
			if tb, ok := at[b]; ok && tb < ea {
				t.fail(rules.ParkConsumer, "the jobs in completion order (the server's): none listed before a job whose completion ran before it was enqueued",
					fmt.Sprintf("%s is listed before %s, which completed %s before %s was enqueued", a, b, time.Duration(ea-tb)*time.Microsecond, a))
				return
			}
		}
	}
	t.cover(rules.ParkConsumer)
}

// enqueues are the server times (µs) of every enqueue of the clause (the harness's and the
// port's), by the id each names (its first).
func (t *T) enqueues() map[string]int64 {
	t.sync()
	at := map[string]int64{}
	for _, l := range t.mon.Snapshot() {
		nk, err := strconv.Atoi(l.Arg(2))
		if s, known := t.law.scripts[argAt(l, 1)]; l.Cmd() == "EVALSHA" && err == nil && known && s.Name == lua.Enqueue {
			if id := l.Arg(3 + nk); id != "" && at[id] == 0 {
				at[id] = l.At
			}
		}
	}
	return at
}

// completions are the server times (µs) of the port's complete and complete_batch calls since
// from, by the id each names (its first completion). SHA1s resolve as in scriptsRun, so an
// admitted edit of either script counts as it.
func (t *T) completions(from int) map[string]int64 {
	at := map[string]int64{}
	add := func(id string, us int64) {
		if _, seen := at[id]; id != "" && !seen {
			at[id] = us
		}
	}
	for _, l := range t.portCommands(from) {
		nk, err := strconv.Atoi(l.Arg(2))
		s, known := t.law.scripts[argAt(l, 1)]
		if l.Cmd() != "EVALSHA" || err != nil || !known {
			continue
		}
		switch s.Name {
		case lua.Complete: // KEYS[1..8], then id, token
			add(l.Arg(3+nk), l.At)
		case lua.CompleteBatch: // KEYS[1..7] and one row per pair, then the pairs
			for k := range nk - 7 {
				add(l.Arg(3+nk+2*k), l.At)
			}
		}
	}
	return at
}

// parkingClauses are C14's clauses for the consumer's host-side duties (A10): claim before parking, a
// timed-out pop parks again without claiming, and wakes handed on so none is lost.
var parkingClauses = []clause{
	{name: "backlog-without-token-claimed-first", body: backlogWithoutTokenClaimedFirst},
	{name: "idle-window-reparks-without-claiming", body: idleWindowReparksWithoutClaiming},
	{name: "idle-past-half-the-lease-only-pops", body: idlePastHalfTheLeaseOnlyPops},
	{name: "enqueues-one-at-a-time-lose-no-wake", body: enqueuesOneAtATimeLoseNoWake},
	{name: "long-pop-keeps-its-line", body: longPopKeepsItsLine},
}

// longPopKeepsItsLine: a pop of 12 s outlasts B-290's 10 s, and its reply falls due only when
// its timeout ends, so the quiet line is no silent server: the port keeps it (B-292). A port
// whose socket read timeout is shorter than its pops (a fixed 10 s, a timeout read as 0) takes
// the line for lost and replaces it mid-pop, and no shorter pop would show it. The kit lets 11 s
// pass with nothing enqueued: the situation made, not a wait for an event; a machine slower
// than that only lets the correct pop time out and re-pop on the same line. Then one job,
// which the consumer completes.
func longPopKeepsItsLine(t *T) {
	q := t.q("orders")
	park := 12 * time.Second
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: workLease, ParkMS: park.Milliseconds(), TimeoutMS: 60000}
	done := t.park(a)
	line := t.waitBlocked(1)[0]
	t.pause(11 * time.Second)
	t.cover(rules.ConnectionsKept)
	now := t.portClientIDs()
	t.check(slices.Contains(now, line), rules.ConnectionsKept,
		fmt.Sprintf("a parked consumer's pop of %s (past B-290's 10 s, its reply due only at its end) keeps its line: 11 s into it, the line that blocked (%s) is still open", park, line),
		"it was closed; the port's connections now: %v", now)
	t.popsWait(m0, q.Wake(), park)
	ids := kitIDs(1, 1<<50)
	start := time.Now()
	t.kitEnqueue("orders", ids)
	t.completed(<-done, start, 5*time.Second, ids, "an enqueue after a long idle pop wakes the parked consumer")
	t.parkConnections(m0, q.Wake())
}

func backlogWithoutTokenClaimedFirst(t *T) {
	q := t.q("orders")
	ids := kitIDs(4, 1<<50)
	t.kitEnqueue("orders", ids)
	t.do("DEL", q.Wake()) // the token a consumer took before it died without claiming
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 4, LeaseMS: workLease, ParkMS: 6000, TimeoutMS: 7000}
	start := time.Now()
	r := <-t.park(a)
	t.completed(r, start, promptly(a), ids, "a backlog whose wake token is gone is claimed before parking (A10: claim first), well before a 6 s pop times out")
	t.noPolling(m0, a)
	t.parkConnections(m0, q.Wake())
}

func idleWindowReparksWithoutClaiming(t *T) {
	q := t.q("orders")
	park := 150 * time.Millisecond
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 1, LeaseMS: workLease, ParkMS: park.Milliseconds(), TimeoutMS: 20000}
	done := t.park(a)
	t.waitBlocked(2)
	m := t.mark()
	from := time.Now()
	t.waitRepops(m, a.Consumers)
	t.popsWait(m0, q.Wake(), park)
	t.idleWindow(m, from, q.Wake(), a.Consumers, park)
	ids := kitIDs(1, 1<<50)
	start := time.Now()
	t.kitEnqueue("orders", ids)
	t.completed(<-done, start, 5*time.Second, ids, "an enqueue after an idle window still wakes a consumer")
	t.noPolling(m0, a)
	t.parkConnections(m0, q.Wake())
}

// idlePastHalfTheLeaseOnlyPops: idle for several times half its lease, with nothing to claim, a
// consumer that ran a maintenance pass (promote, reap) every lease/2 would poll (canon §1.6).
// Nothing is enqueued, so no job is held and the short lease risks nothing on a slow machine;
// the park ends by its own timeout_ms with no job.
func idlePastHalfTheLeaseOnlyPops(t *T) {
	q := t.q("orders")
	park := 200 * time.Millisecond
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: 600, ParkMS: park.Milliseconds(), TimeoutMS: 2500}
	done := t.park(a)
	t.waitBlocked(1)
	m := t.mark()
	r := <-done
	t.ok(r.err, rules.Park, "park of an empty queue, ended by its timeout_ms")
	t.check(len(r.res.Jobs) == 0, rules.Park, "no job completed (none was enqueued)", "%+v", r.res.Jobs)
	t.cover(rules.Park)
	for _, l := range t.portCommands(m) {
		// The session's own upkeep may fall in the window on a slow machine: a health
		// check, the minter's renewal (A9). Work is a script call or any other command.
		if (l.Cmd() == "BLPOP" && argAt(l, 1) == q.Wake()) || l.Cmd() == "PING" || strings.HasPrefix(argAt(l, 1), "{emq}:minter:") {
			continue
		}
		t.fail(rules.Park, fmt.Sprintf("a consumer parked idle for its whole timeout (lease %d ms, pops of %s) sends nothing but BLPOP on %s", a.LeaseMS, park, q.Wake()),
			"the port sent "+l.String())
	}
}

func enqueuesOneAtATimeLoseNoWake(t *T) {
	q := t.q("orders")
	m0 := t.mark()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 3, Jobs: 8, LeaseMS: workLease, ParkMS: 8000, TimeoutMS: 12000}
	done := t.park(a)
	t.waitBlocked(3)
	ids := kitIDs(8, 1<<50)
	start := time.Now()
	for _, id := range ids {
		t.kitEnqueue("orders", []string{id})
		time.Sleep(40 * time.Millisecond) // spread: a job enqueued after others completed orders the reply
	}
	t.completed(<-done, start, promptly(a), ids, "eight enqueues one at a time while three consumers park lose no wake")
	t.check(t.llen(q.Wake()) <= 1, rules.WakeOne, "the wake list never exceeds one", "length %d", t.llen(q.Wake()))
	t.noPolling(m0, a)
	t.parkConnections(m0, q.Wake())
}

// parkLineQuietWhileItsWorkerIsAway is C14's, on a standalone server only (a relay): a woken
// consumer works its backlog on its command connection, away from its parking line, for longer
// than any other clause keeps it there. The relay hands that connection's replies on 1 s late
// (the parking line's come at once), and four jobs wait: four claims and four completes, 8 s or
// more with the line idle and nothing owed on it. The line still carries nothing but BLPOP
// (A10): a health check of the port's own (a PING after a few quiet seconds) does not belong
// on it. Each reply is only 1 s late, well inside B-303's 5 s.
func parkLineQuietWhileItsWorkerIsAway(t *T) {
	t.throughRelay(0, rules.Park, relayHello, func(r *chop.Relay) {
		q := t.q("orders")
		m0 := t.mark()
		a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 4, LeaseMS: workLease, ParkMS: 1000, TimeoutMS: 60000}
		done := t.parkBehindALaggingCommandLine(r, a)
		ids := kitIDs(a.Jobs, 1<<50)
		start := time.Now()
		t.kitEnqueue("orders", ids)
		t.completed(<-done, start, 45*time.Second, ids, "a consumer woken to four jobs, its command connection's replies 1 s late, completes them")
		t.parkConnections(m0, q.Wake())
	})
}

// parkBehindALaggingCommandLine starts the park a through relay r and, once its consumers are
// blocked, makes every connection of the port but the parking lines hand the server's replies
// on 1 s late.
func (t *T) parkBehindALaggingCommandLine(r *chop.Relay, a protocol.ParkArgs) <-chan parked {
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	slow := map[string]bool{}
	for _, c := range t.portClients() {
		if c["cmd"] != "blpop" {
			slow[c["addr"]] = true
		}
	}
	r.Lag(func(addr string) bool { return slow[addr] }, time.Second)
	return done
}

// wokenWhileAnEmptyClaimIsOut is C14's, on a standalone server only (a relay). A wake token with
// no job behind it (its job taken by another worker: a stale wake) wakes one of two parked
// consumers, whose claim runs on the server at once and finds nothing, but its reply is held 1 s
// by the relay (the command connection lags; the parking lines do not). Meanwhile the kit
// enqueues the park's one job, and its wake token reaches the other consumer at once. A10-5: a
// consumer claims until empty after every wake; the job must not wait for a next enqueue. A port
// that counts the empty claim still out against the park's jobs, and sends the woken consumer
// back to its pop without a claim, has lost the job's only token: the park times out.
func wokenWhileAnEmptyClaimIsOut(t *T) {
	t.throughRelay(0, rules.Park, relayHello, func(r *chop.Relay) {
		q := t.q("orders")
		a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 1, LeaseMS: workLease, ParkMS: 1000, TimeoutMS: 12000}
		done := t.parkBehindALaggingCommandLine(r, a)
		m := t.mark()
		t.do("RPUSH", q.Wake(), "1") // a stale wake: no job behind it
		claimed := func() bool {
			for _, l := range t.portCommands(m) {
				if t.evalshaOf(l) == lua.Claim {
					return true
				}
			}
			return false
		}
		for until := time.Now().Add(5 * time.Second); !claimed() && time.Now().Before(until); {
			time.Sleep(5 * time.Millisecond)
		}
		t.check(claimed(), rules.Park, "a consumer woken by a token claims (A10-5)", "no claim on the wire 5 s after the wake")
		ids := kitIDs(1, 1<<50)
		start := time.Now()
		t.kitEnqueue("orders", ids)
		t.completed(<-done, start, 10*time.Second, ids, "a job enqueued while a woken consumer's empty claim is still out (its reply 1 s late) wakes the other consumer, which claims it")
	})
}

// parkConnections checks every connection that popped the wake key since from, over its whole
// life (A10): HELLO first, then the fence, then nothing but BLPOP on the wake key. Claims and
// settlements belong on other connections, or a parked consumer's pop would hold them up.
func (t *T) parkConnections(from int, wake string) {
	t.cover(rules.Park)
	parkers, _ := byClient(t.portLines(from))
	_, life := byClient(t.portLines(0))
	const expected = "a parking connection sends HELLO 2, then the fence, then nothing but BLPOP on the wake key (A10)"
	for _, c := range parkers {
		ls := life[c]
		if !slices.ContainsFunc(ls, func(l Line) bool { return l.Cmd() == "BLPOP" }) {
			continue
		}
		t.check(ls[0].Cmd() == "HELLO", rules.Park, expected, "connection %s began with %s", c, ls[0])
		fenced := !t.fenceShown(ls) // on a cluster node not owning {emq}: the wire law matches its redirected fence
		for _, l := range ls[1:] {
			switch {
			case l.Cmd() == "CLIENT" || (l.Cmd() == "SCRIPT" && !fenced):
			case l.Cmd() == "EVALSHA" && t.law.IsFence(argAt(l, 1)) && !fenced:
				fenced = true
			case l.Cmd() == "BLPOP" && argAt(l, 1) == wake && fenced:
			default:
				t.fail(rules.Park, expected, fmt.Sprintf("connection %s (fenced: %v) sent %s", c, fenced, l))
			}
		}
	}
}

// wokenConsumerDrainsFirst is C14's: a consumer claims until empty after every wake, and only
// then parks (A10-5). One parked consumer, twenty jobs enqueued at once (one MULTI): it drains
// them on the one wake. The claims re-arm the wake while work remains, so a consumer that parks
// after each claim still completes every job, promptly: only its pops tell. A correct one pops
// at most three times after the wake (the token a claim left when the queue emptied, then the
// pop the park's end cuts); one that parks after every claim pops once per job.
func wokenConsumerDrainsFirst(t *T) {
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 20, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 60000}
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	m := t.mark()
	ids := kitIDs(a.Jobs, 1<<50)
	start := time.Now()
	t.kitEnqueue("orders", ids)
	t.completed(<-done, start, 30*time.Second, ids, "a burst of twenty jobs wakes the one parked consumer")
	pops := 0
	for _, l := range t.portCommands(m) {
		if l.Cmd() == "BLPOP" {
			pops++
		}
	}
	t.check(pops <= 3, rules.Park, "a woken consumer claims until the queue is empty before it parks again: at most 3 pops while it drains 20 jobs", "%d pops", pops)
}

// popsWait checks that every BLPOP on wake since mark from waits park (B-299): its timeout
// argument is park in seconds, the fraction kept (150 ms is 0.15, never 0 or 1). The park's
// timeout_ms is far off, so no pop is shortened to what is left of it.
func (t *T) popsWait(from int, wake string, park time.Duration) {
	t.cover(rules.ParkPop)
	for _, l := range t.portCommands(from) {
		if l.Cmd() != "BLPOP" || argAt(l, 1) != wake {
			continue
		}
		secs, err := strconv.ParseFloat(argAt(l, 2), 64)
		if err != nil || math.Abs(secs-park.Seconds()) > 1e-9 {
			t.fail(rules.ParkPop, fmt.Sprintf("every pop of a park with park_ms %d waits %g s (BLPOP's timeout argument, the fraction kept)", park.Milliseconds(), park.Seconds()),
				"the port sent "+l.String())
		}
	}
}
