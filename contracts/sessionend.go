package contracts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/keys"
)

// How a session lets go (contracts/PROTOCOL.md Part B): every other clause ends its session with
// close after the last reply, so a port that only exits on close, or keeps a connection open
// until then, passes them all. Here the kit ends the port's input under a running park (B-286),
// and counts the port's connections on the server once a park has answered and after close
// (B-287, B-77); a reconnect's are C01 fence-again-after-reconnect's (B-76).

// inputEndedMidPark is C01's: two consumers park on a queue nobody fills, for up to 30 s, and
// the kit closes the port's input without a close. The bound is the park's own: a port that ends
// the park at once exits well before its timeout_ms, one that waits the park out exits after it.
func inputEndedMidPark(t *T) {
	e, ok := t.D.(drivers.InputEnder)
	if !ok {
		t.notRun("the session has no input the kit can end (%s)", t.D.Name())
	}
	t.mintN(1, rules.InputEnded)
	k, _ := keys.Minter(t.portWorker(rules.InputEnded))
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 1, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 30000}
	start := time.Now()
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	until := start.Add(time.Duration(a.TimeoutMS) * time.Millisecond)
	err := e.EndInput(t.ctx, until)
	took := time.Since(start)
	t.ok(err, rules.InputEnded, "the session's end when the port's input ends with a park in flight and no close sent (exit status 0)")
	t.check(took < time.Duration(a.TimeoutMS)*time.Millisecond, rules.InputEnded,
		fmt.Sprintf("the park in flight ends at once: the session is over before the park's timeout_ms of %d ms has run out", a.TimeoutMS),
		"it was over %s after the park was sent", took.Round(time.Millisecond))
	<-done // its reply, or none: nobody is left to read it
	p := t.releasedOnClose(k)
	t.check(p == -2, rules.InputEnded, "the minter lease released: "+k+" gone once the port's connections closed", "it is still there with PTTL %d", p)
}

// inputEndedAfterClose is C01's, the other side of B-286: the kit writes a park and a close
// behind it, then closes the port's input. That input ended with a close, so B-286 (an input that
// ends without one) does not apply: the park is served as any park, until its jobs were claimed
// and completed or its timeout_ms passed (B-74), then the close is answered and the port exits 0
// (B-280, B-24). A port that cuts a park short whenever its input ends, though a request it has
// read waits behind the park, answers the park with no job. The kit waits up to 1 s for such an
// answer before it enqueues the park's job (a wait the check does not rest on: a correct port
// completes the job whenever it comes, well inside the park's 30 s).
func inputEndedAfterClose(t *T) {
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: workLease, ParkMS: 30000, TimeoutMS: 30000}
	id := kitIDs(1, 1<<50)[0]
	p, _, err := t.parkThenInputEnds(a, request("close"), id)
	t.ok(p.err, rules.InputEnded, "a park and a close written together, then the input ended: both answered, in order")
	t.ok(p.replies[0].Err, rules.InputEnded, "the park written before the close")
	var park protocol.ParkResult
	decodeInto(t, p.replies[0].Result, &park, "park")
	t.check(len(park.Jobs) == 1 && park.Jobs[0].ID == id && park.Jobs[0].Token == 1, rules.InputEnded,
		fmt.Sprintf("the input ended after a close, so the park written before it runs as any park: it completes %s, enqueued after the input ended, well inside its timeout_ms of %d ms (it is no park in flight at an end of input without a close)", id, a.TimeoutMS),
		"the park answered %+v", park.Jobs)
	t.ok(p.replies[1].Err, rules.Close, "the close written after the park")
	t.ok(err, rules.Close, "the port exits with status 0 after the close, its input ended")
}

// inputEndedBehindAnEnqueue is C01's, B-286 with a request read before the end: the kit writes
// a park (1 consumer, jobs 1, timeout_ms 30000, on a queue nobody fills) and an enqueue of its own
// id behind it, no close, and closes the port's input once the consumer blocks. B-286 ends the
// session as close ends it, and a close written where the input ended would have been served
// after the enqueue, which sees the effects of those before it (B-280): only a park in flight
// ends at once, and its reply, like the enqueue's, nobody need read. So the port may end the park
// at once or serve it to its job, which the kit enqueues after up to 1 s (a wait no check rests
// on), but the enqueue it read runs whole: its job is pending once the port has exited 0. A port
// that drops or cuts short the last request it read when its input ends (the reference's
// portserver reads one line ahead, so its end of input comes the moment the enqueue is handed
// over) leaves no job. An ignored field (B-277) fills the enqueue's line to 2 MiB, so the port
// is still reading it when the end comes.
func inputEndedBehindAnEnqueue(t *T) {
	a := protocol.ParkArgs{Queue: "idle", Consumers: 1, Jobs: 1, LeaseMS: workLease, ParkMS: 30000, TimeoutMS: 30000}
	id := kitIDs(1, 1<<50)[0]
	const payload = "read before the input ended"
	enq := request("enqueue", "queue", "orders", "id", id, "payload_b64", b64(payload))
	enq.Fields[unknownField] = domains.Raw(strings.Repeat("a", 2<<20))
	p, endInput, err := t.parkThenInputEnds(a, enq, kitIDs(1, 1<<51)[0])
	if !endInput {
		t.ok(p.err, rules.InFlight, "a park and an enqueue served in turn")
	}
	t.ok(err, rules.InputEnded, "the session's end when the port's input ends, no close sent, with a park in flight and an enqueue read behind it (exit status 0)")
	row := jobKey(t.q("orders"), id)
	got, there := t.hget(row, "payload")
	t.check(there && got == payload, rules.InputEnded,
		fmt.Sprintf("the enqueue of %s, read before the input ended, ran whole as any request before a close (B-280): its job is there, payload %q, once the port has exited", id, payload),
		"%s", map[bool]string{false: "no row " + row, true: "its payload is " + short(got)}[there])
	if there {
		t.state("orders", id, "pending", 0, rules.InputEnded)
	}
}

// inputEndedInsideALine is C01's, B-286 when the input ends inside a line (a kit killed while it
// wrote, a pipe cut): once the session serves, the kit writes an enqueue with no newline after it
// and ends the port's input there. The session ends as close ends it, the port exiting 0 within
// 10 s; whether it serves those last bytes is its own, but an enqueue it serves runs whole. A
// port that reads on, waiting for a newline that cannot come, never exits (the reference's
// portserver did: red team 55).
func inputEndedInsideALine(t *T) {
	c, ok := t.D.(drivers.InputCutter)
	if !ok {
		t.notRun("the port runs in the kit's own process: it has no standard input to end inside a line")
	}
	t.enqueue("orders", "before the input ended")
	id := kitIDs(1, 1<<50)[0]
	const payload = "the last bytes, no newline"
	err := c.EndInputInsideALine(t.ctx, request("enqueue", "queue", "orders", "id", id, "payload_b64", b64(payload)), time.Now().Add(10*time.Second))
	t.ok(err, rules.InputEnded, "the session's end when the port's input ends inside a line, an enqueue written with no newline after it (exit status 0 within 10 s)")
	if got, there := t.hget(jobKey(t.q("orders"), id), "payload"); there {
		t.check(got == payload, rules.InputEnded, fmt.Sprintf("the enqueue of %s the port served from its last bytes ran whole", id), "its payload is %s", short(got))
		t.state("orders", id, "pending", 0, rules.InputEnded)
	}
}

// parkConnectionsClosed is C14's: a park of no job (answered at once, perhaps before its
// consumers have connected), then a park of three consumers that completes three jobs; once they
// have answered, every connection the port opened since the first began is closed on the server,
// and after close the port holds none. A connection left open lives until the session ends, so
// waiting up to 10 s for the server to see a close is no race.
func parkConnectionsClosed(t *T) {
	before := t.portClientIDs()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 4, Jobs: 0, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 20000}
	r := <-t.park(a)
	t.ok(r.err, rules.Park, "park of 0 jobs")
	a = protocol.ParkArgs{Queue: "orders", Consumers: 3, Jobs: 3, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 20000}
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	t.kitEnqueue("orders", kitIDs(a.Jobs, 1<<50))
	r = <-done
	t.ok(r.err, rules.Park, "park")
	t.check(len(r.res.Jobs) == a.Jobs, rules.Park, fmt.Sprintf("the park completes the %d jobs", a.Jobs), "%+v", r.res.Jobs)
	left := t.openBeside(before)
	t.check(len(left) == 0, rules.ConnectionsClosed, "once a park has answered, the connections it opened are closed (a park of 0 jobs, then one of 3 consumers and 3 jobs; a later park opens its own)", "still open on the server: %v", left)
	d := t.D
	t.D = nil // closed here, not again at the end of the clause
	t.ok(d.Close(t.ctx), rules.Close, "close")
	left = t.openBeside(nil)
	t.check(len(left) == 0, rules.ConnectionsClosed, "after close the port holds no connection to the server", "still open: %v", left)
}

// portClientIDs are the ids of the port's connections on the server (id@node on a cluster).
func (t *T) portClientIDs() []string {
	var ids []string
	for _, c := range t.portClients() {
		ids = append(ids, c["id"]+"@"+c["node"])
	}
	return ids
}

// openBeside waits up to 10 s until the port holds no connection but those of keep, and returns
// the others still open then (each with its last command).
func (t *T) openBeside(keep []string) []string {
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = left[:0]
		for _, c := range t.portClients() {
			if !slices.Contains(keep, c["id"]+"@"+c["node"]) {
				left = append(left, fmt.Sprintf("%s (name %q, last command %s)", c["addr"], c["name"], c["cmd"]))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// healthyConnectionsKept is C01's, on a standalone server. B-292: every other clause ends within
// a few seconds of its hello, so a port that closed its own connections on a timer certified,
// while in use each such close loses the requests in flight. A connect timeout left armed once
// the connection was up, or an idle timeout, fires on a socket with nothing to do, which the
// clauses' steady requests never leave: here the port is left idle for 6 s past the hello, then
// asked a request whose reply the server holds (lateReplyKept, B-303) and one round of requests,
// and every connection the hello opened must still be open on the
// server, with none beside them. Then the server drops them all: once a request is served again
// the port holds as many connections as before, and holds still over 2 s more of requests (B-300:
// a redial loop that went on dialing once it had connected certified, since every clause that
// drops a connection ends soon after the redial). A slow machine only lengthens the spans.
func healthyConnectionsKept(t *T) {
	before := t.portClientIDs()
	t.check(len(before) > 0, rules.ConnectionsKept, "the session holds a connection to the server after hello", "none on the server (CLIENT LIST)")
	t.pause(6 * time.Second) // the idle span is the situation made, not a wait for an event
	t.lateReplyKept(before)  // the first request after it
	t.heldStill(before, 0, false, "idle 6 s after the hello, then a late reply")
	t.killPortConnections()
	t.ok(t.afterDrop(nil), rules.Dropped, "a request after the server dropped every connection of the port")
	after := t.portClientIDs()
	t.check(len(after) == len(before), rules.RedialOnce,
		fmt.Sprintf("once served again, the port holds as many connections as before the drop (%d)", len(before)), "%d: %v", len(after), after)
	t.heldStill(after, 2*time.Second, true, "busy after the redial")
}

// lateQuiet is how long the port has sent nothing when lateReplyKept's request goes out, and
// lateHoldMS how long the server then holds it: the quiet and the hold together pass the 5 s
// B-303 speaks of, the hold alone does not (the quiet is what makes a port that counts from
// its last reply give up early).
const (
	lateQuiet  = 3500 * time.Millisecond
	lateHoldMS = 4500
)

// lateReplyKept is B-303: once the port has sent nothing to the server for lateQuiet (its own
// health checks included; up to 10 s are waited for such a spell), the server holds every write
// for lateHoldMS (CLIENT PAUSE WRITE) and the port is asked an enqueue. Its reply comes late, not
// never: the enqueue succeeds and every connection is kept. A port that counts a connection's
// silence from its last reply, not from the request, takes the quiet spell for part of the wait
// and gives a live connection up; every other clause's requests follow a fresh reply.
func (t *T) lateReplyKept(held []string) {
	t.quietFor(lateQuiet, 10*time.Second)
	t.pauseWrites(lateHoldMS)
	start := time.Now()
	_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "late", PayloadB64: b64("late")})
	t.ok(err, rules.LateReply, fmt.Sprintf("an enqueue sent after the port was quiet %s, its reply held %d ms by the server (CLIENT PAUSE WRITE; answered after %s)",
		lateQuiet, lateHoldMS, time.Since(start).Round(time.Millisecond)))
	t.stillHeld(held, rules.LateReply, "after a reply the server held "+fmt.Sprint(lateHoldMS)+" ms")
}

// quietFor waits until the port has sent the server nothing for d by the server's clock (its
// last line on MONITOR is that old), or limit has passed.
func (t *T) quietFor(d, limit time.Duration) {
	for until := time.Now().Add(limit); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		var last int64
		for _, l := range t.portLines(0) {
			last = max(last, l.At)
		}
		if t.now()*1000-last >= d.Microseconds() {
			return
		}
	}
}

// heldStill spends span, sending enqueue, claim and complete all along when busy, or once at its
// end when not (a timer of the port's on an idle socket fires meanwhile), then checks that the
// port's connections are still exactly held: none of them closed (B-292), none opened beside
// them (B-300).
func (t *T) heldStill(held []string, span time.Duration, busy bool, when string) {
	round := func(n int) {
		id := t.enqueue("kept", fmt.Sprint(n)) // not orders, where afterDrop's jobs wait
		c, err := t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: "kept", LeaseMS: workLease})
		t.ok(err, rules.ConnectionsKept, "claim while the server answers")
		t.check(c != nil && c.ID == id, rules.ConnectionsKept, "claim answers the job just enqueued", "%s", claimText(c))
		t.ok(t.D.Complete(t.ctx, protocol.FenceArgs{Queue: "kept", ID: id, Token: c.Token}), rules.ConnectionsKept, "complete")
	}
	n := 0
	for start := time.Now(); busy && time.Since(start) < span; n++ {
		round(n)
		time.Sleep(100 * time.Millisecond)
	}
	if !busy {
		t.pause(span) // the idle span is the situation made, not a wait for an event
	}
	round(n)
	if span > 0 {
		when = fmt.Sprintf("%s for %s", when, span)
	}
	t.stillHeld(held, rules.ConnectionsKept, when)
}

// stillHeld checks that the port's connections are exactly held: none of them closed (under
// rule), none opened beside them (B-300).
func (t *T) stillHeld(held []string, rule rules.Rule, when string) {
	now := t.portClientIDs()
	closed := slices.DeleteFunc(slices.Clone(held), func(id string) bool { return slices.Contains(now, id) })
	added := slices.DeleteFunc(slices.Clone(now), func(id string) bool { return slices.Contains(held, id) })
	t.check(len(closed) == 0, rule,
		fmt.Sprintf("%s, every connection the port held is still open (%v)", when, held),
		"closed: %v; open now: %v", closed, now)
	t.check(len(added) == 0, rules.RedialOnce,
		fmt.Sprintf("%s, the port opened no connection beside those it held (%v)", when, held),
		"opened: %v; open now: %v", added, now)
}

// piped is a pipeline's replies and error.
type piped struct {
	replies []drivers.RawReply
	err     error
}

// parkThenInputEnds writes the park a and the request next behind it, together, and once the
// park's consumers block ends the port's input, when the port reads its requests as they are
// written (drivers.Conversing): the in-process reference, a front over it too, serves the two in
// turn, holds nothing in flight, and its input is not ended. It waits up to 1 s for the park's
// answer (a wait no check rests on), then the kit enqueues job onto the park's queue. It returns
// the pipeline's outcome, whether the input was ended, and the end of input's outcome (nil for
// exit status 0).
func (t *T) parkThenInputEnds(a protocol.ParkArgs, next drivers.RawRequest, job string) (piped, bool, error) {
	e, ok := t.D.(drivers.InputEnder)
	_, talks := t.D.(drivers.Conversing)
	endInput := ok && talks
	reqs := []drivers.RawRequest{
		request("park", "queue", a.Queue, "consumers", a.Consumers, "jobs", a.Jobs, "lease_ms", a.LeaseMS, "park_ms", a.ParkMS, "timeout_ms", a.TimeoutMS),
		next,
	}
	finished, _ := t.parkSent(a)
	done := make(chan piped, 1)
	go func() {
		defer t.recoverPanic()
		defer close(finished)
		r, err := drivers.Pipeline(t.ctx, t.D, reqs)
		done <- piped{r, err}
	}()
	t.waitBlocked(a.Consumers) // the port has read the park, and the request written with it
	until := time.Now().Add(time.Duration(a.TimeoutMS)*time.Millisecond + 15*time.Second)
	ended := make(chan error, 1)
	if endInput {
		go func() {
			defer t.recoverPanic()
			ended <- e.EndInput(t.ctx, until)
		}()
		select {
		case <-finished:
		case <-time.After(time.Second):
		}
	} else {
		ended <- nil
	}
	t.kitEnqueue(a.Queue, []string{job})
	p, err := <-done, <-ended
	return p, endInput, err
}
