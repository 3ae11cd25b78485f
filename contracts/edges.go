package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/chop"
	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

// Edges the documents state outright that no clause of the contracts' own themes reached: the
// order of the key builder's checks, a shape fault before a bad name, mint's bound, the defaults
// of an enqueue, a lease lost by the minter's own clock, the clock aid's way back to the real
// clock and its first and last milliseconds, the park op's consumer index.

// refusalOrderClauses are C04's: which refusal a request with two faults gets, where the documents say.
var refusalOrderClauses = []clause{
	{name: "refusal-order", body: refusalOrder},
	{name: "shape-before-names", body: shapeBeforeNames},
}

func refusalOrder(t *T) {
	ord := ids.Encode("ORD", 1<<40)
	m := t.mark()
	cases := []struct {
		what string
		err  error
		want *emqerr.Error
	}{
		{"enqueue on queue Orders of the id " + ord + " (the queue before the brand)",
			errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "Orders", ID: ord, PayloadB64: b64("x")})), emqerr.Key},
		{"enqueue into lane East of the id " + ord + " (the lane before the brand)",
			errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", Lane: "East", ID: ord, PayloadB64: b64("x")})), emqerr.Key},
		{"complete of ORD0000000000! (the shape before the brand)", t.D.Complete(t.ctx, fa("orders", "ORD0000000000!", 1)), emqerr.Key},
		{"the job key of " + ord + " on queue Bad! (the queue before the brand)",
			errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: "Bad!", Type: "job", ID: ord})), emqerr.Key},
		// A field that is present is held to its domain whatever its value (B-90): the key
		// op's id and lane too when the type does not use them, in §2.4's order.
		{"the pending key with the id JOB0000000000! given (the type does not use it)",
			errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "pending", ID: "JOB0000000000!"})), emqerr.Key},
		{"the pending key with the id " + ord + " given (another brand)",
			errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "pending", ID: ord})), emqerr.Kind},
		{"the job key of " + ord + " with the lane East given (the lane before the brand)",
			errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "job", ID: ord, Lane: "East"})), emqerr.Key},
	}
	for _, c := range cases {
		t.refused(c.err, c.want, rules.CheckOrder, c.what)
	}
	t.cover(rules.CheckOrder)
	if ls := t.portCommands(m); len(ls) > 0 {
		t.fail(rules.KeyBuilder, "every refusal before any command reaches the server", fmt.Sprintf("%d command(s) reached it", len(ls)), ls...)
	}
}

func shapeBeforeNames(t *T) {
	ord := ids.Encode("ORD", 1<<40)
	m := t.mark()
	for _, c := range []struct {
		op     string
		fields map[string]any
	}{
		{"claim", map[string]any{"queue": "Bad!", "lease_ms": nil}},
		{"claim", map[string]any{"queue": "Bad!", "lease_ms": "1"}},
		{"enqueue", map[string]any{"queue": "Bad!", "payload_b64": "*"}},
		{"enqueue", map[string]any{"queue": "Bad!"}},
		{"enqueue", map[string]any{"queue": "orders", "id": ord, "payload_b64": "*"}},
		{"complete", map[string]any{"queue": "Bad!", "id": ord}},
		// An empty name is EMQKEY on its own (B-92), yet a shape fault beside it still wins.
		{"enqueue", map[string]any{"queue": "", "payload_b64": "*"}},
		{"claim", map[string]any{"queue": "", "lease_ms": "1"}},
		{"enqueue", map[string]any{"queue": "orders", "lane": "", "payload_b64": nil}},
		{"complete", map[string]any{"queue": "orders", "id": "", "token": "1"}},
	} {
		req := map[string]json.RawMessage{}
		for k, v := range c.fields {
			req[k] = domains.Raw(v)
		}
		_, err := drivers.Raw(t.ctx, t.D, c.op, req)
		t.refused(err, emqerr.Arg, rules.ShapeFirst, fmt.Sprintf("%s %s (a shape fault beside a bad name or brand)", c.op, domains.Raw(c.fields)))
	}
	if ls := t.portCommands(m); len(ls) > 0 {
		t.fail(rules.ShapeFirst, "a shape fault refused before any command reaches the server", fmt.Sprintf("%d command(s) reached it", len(ls)), ls...)
	}
}

// mintBoundAndDefaults is C02's: mint's bound and the defaults of an enqueue and a mint.
func mintBoundAndDefaults(t *T) {
	_, err := drivers.Raw(t.ctx, t.D, "mint", map[string]json.RawMessage{"n": domains.Raw(1000), "parallel": domains.Raw(101)})
	t.refused(err, emqerr.Arg, rules.MintBound, "mint of 1000 ids × 101 callers (101000 in all)")
	r, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1000, Parallel: 100})
	t.ok(err, rules.MintBound, "mint of 1000 ids × 100 callers (100000 in all)")
	t.check(len(r.IDs) == 100, rules.MintBound, "100 lists", "%d lists", len(r.IDs))
	raw, err := drivers.Raw(t.ctx, t.D, "mint", map[string]json.RawMessage{"n": domains.Raw(2)})
	var one protocol.MintResult
	t.ok(errors.Join(err, json.Unmarshal(raw, &one)), rules.EnqueueDefaults, "mint without parallel")
	t.check(len(one.IDs) == 1 && len(one.IDs[0]) == 2, rules.EnqueueDefaults, "mint without parallel: one caller, one list of 2", "%v", one.IDs)
	// An enqueue with only its required fields: a minted id, pending now, no lane.
	raw, err = drivers.Raw(t.ctx, t.D, "enqueue", map[string]json.RawMessage{"queue": domains.Raw("orders"), "payload_b64": domains.Raw(b64("plain"))})
	var e protocol.EnqueueResult
	t.ok(errors.Join(err, json.Unmarshal(raw, &e)), rules.EnqueueDefaults, "enqueue with only queue and payload_b64")
	t.validJob(e.ID)
	q := t.q("orders")
	sc, ok := t.zscore(q.Pending(), e.ID)
	t.check(e.Created && ok && sc == 0, rules.EnqueueDefaults, "the job pending now, score 0 (delay_ms absent is 0)", "created %v, in pending %v, score %d", e.Created, ok, sc)
	_, inLane := t.hget(q.LaneOf(), e.ID)
	t.check(!inLane && !t.exists(q.Scheduled()), rules.EnqueueDefaults, "no lane, nothing scheduled (lane absent is the plain queue)", "laneof %v", inLane)
}

// leaseLostByOwnClock is C02's: a lease the minter cannot renew runs out by its own clock.
func leaseLostByOwnClock(t *T) {
	t.helloWith(protocol.HelloArgs{MinterTTLMS: 300})
	first := t.mintN(1, rules.LeaseOwnClock)[0]
	w := t.shortLeaseWorker(first)
	// B-79: the clock aid moves the snowflake's milliseconds, not lease expiry. A port that
	// offers it has its minter's clock slowed to a crawl first, so a port that read its lease's
	// time from that clock would find no time passed and mint on.
	if c, ok := t.D.(drivers.Clocker); ok && t.hasCap(protocol.CapClock) {
		t.setClock(c, time.Now().UnixMilli(), 1_000_000, rules.LeaseOwnClock)
	}
	t.noMintAfterItsLeaseRanOut(first, w, "by the minter's clock", nil)
}

// wallClockUnset is why lease-lost-across-a-wall-step is not run for a port whose wall clock
// the kit cannot set: one word for both kinds, so that the reference's report reads the same in
// the kit's process and as emq-port (TestReferenceSubprocess).
const wallClockUnset = "the kit cannot set this port's wall clock: the port runs in the kit's own process, or its runtime reads the time past the C library (a static Go binary), so its ids carry the real time with its wall clock set an hour back"

// wallStep is how far lease-lost-across-a-wall-step sets the port's wall clock back, at its start
// and again under the paused writes: far more than any lease, and than its 300 ms lease.
const wallStep = time.Hour

// leaseLostAcrossAWallStep is C02's: canon §3.4-8 times the lease on the minter's monotonic clock,
// so a wall clock set back under a lease that cannot be renewed buys it no time. The port runs
// with its wall clock an hour behind (the kit preloads libfaketime: the ids it mints show whether
// that took), and is set back another hour once every write has paused; a port that timed its
// lease on the wall clock finds it an hour younger and mints on under a worker id whose lease ran
// out. NOT RUN (not offered) where the kit cannot set the port's wall clock.
func leaseLostAcrossAWallStep(t *T) {
	t.helloWith(protocol.HelloArgs{MinterTTLMS: 300})
	first := t.mintN(1, rules.LeaseOwnClock)[0]
	ms, _, _ := ids.Split(t.validJob(first))
	if ms+uint64(wallStep/time.Millisecond)/2 > uint64(sinceEpochMS(t.now())) {
		t.notRun("%s", wallClockUnset)
	}
	w := t.shortLeaseWorker(first)
	back := -wallStep
	t.noMintAfterItsLeaseRanOut(first, w, fmt.Sprintf("by the monotonic clock, its wall clock set back %s under the paused writes", wallStep), func() {
		back -= wallStep // each pause steps it again: a longer pause follows renewals that landed
		if err := t.wall.Set(back); err != nil {
			t.harness("%v", err)
		}
	})
}

// renewalsAnsweredLate is C02's, on a standalone server only (a relay in front of it): canon
// §3.4-8 loses a lease that *may* have run out by the minter's own clock, even where the server
// kept the key. The port leases its worker id for 1 s; then every reply to it, on every
// connection it has or opens, comes 1.5 s late (in order, nothing lost) for 2 s. The server
// runs each renewal on time and keeps the key, but no renewal's OK reaches the port within the
// ttl of its sending, so by its clock the lease ran out. Once replies are on time again and the
// late ones have landed, a mint must not come under that worker id on the strength of the old
// lease, revived by an OK that came later (an outside red team's defective port, and the Node
// port, did): a mint answers INTERNAL, or comes under a worker id the port acquired afresh
// (SET … NX) since the lag began.
func renewalsAnsweredLate(t *T) {
	const ttl, lag, spell = 1000, 1500 * time.Millisecond, 2 * time.Second
	t.throughRelayWith(0, protocol.HelloArgs{MinterTTLMS: ttl}, rules.LeaseOwnClock, relayHello, func(r *chop.Relay) {
		if !t.hasCap(protocol.CapMinterTTL) {
			t.notRun("the port does not offer minter_ttl: its own lease time is unknown, so no lag is known to outlast it")
		}
		first := t.mintN(1, rules.LeaseOwnClock)[0]
		_, w, _ := ids.Split(t.validJob(first))
		from := t.mark()
		r.LagAll(lag)
		t.pause(spell) // the scenario's length: the lease runs out by the port's clock within it
		r.LagAll(0)
		// The late replies land (lag), then half a ttl: a renewal since (every ttl/3) had its OK
		// on time, while the key a port renewed until then is still on the server.
		t.pause(lag + ttl/2*time.Millisecond)
		t.cover(rules.LeaseOwnClock)
		m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 5})
		if err != nil {
			t.check(t.answeredInternal(err), rules.LeaseOwnClock, "a mint after the lease ran out by the port's clock answers INTERNAL (not a canon refusal) or mints under a lease taken since", "%v", err)
			return
		}
		fresh := t.acquiredSince(from, w)
		for _, id := range m.IDs[0] {
			_, got, _ := ids.Split(t.validJob(id))
			t.check(id > first && (got != w || fresh), rules.LeaseOwnClock,
				fmt.Sprintf("after every reply came %s late for %s (worker %d's lease, %d ms, ran out by the port's clock while the server kept it), no id under worker %d unless the port acquired it afresh (SET … NX) since; ids above %s", lag, spell, w, ttl, w, first),
				"%s under worker %d, acquired afresh: %t", id, got, fresh)
		}
	})
}

// shortLeaseWorker is the worker id of first, minted after a hello with minter_ttl_ms 300, or
// the clause ends NOT RUN when the port leased it for longer. It is read from the id, not from
// the server: on a busy machine the port's renewals may come late, and its 300 ms lease is then
// rightly given up and gone from the server before the kit looks.
func (t *T) shortLeaseWorker(first string) int {
	_, w, _ := ids.Split(t.validJob(first))
	if ttl := t.leaseTTL(w, 0); ttl > 1500 {
		t.notRun("the port leases its worker id for %d ms and does not honour hello's minter_ttl_ms", ttl)
	}
	return w
}

// noMintAfterItsLeaseRanOut pauses every write (the port's renewals hang, so its 300 ms lease
// runs out long before the server says so) and mints: no id may come under worker w. paused,
// when set, runs once the writes have paused. A port whose renewals landed before the pause
// gets a longer pause, up to 24 s.
func (t *T) noMintAfterItsLeaseRanOut(first string, w int, how string, paused func()) {
	for _, pause := range []int64{1500, 6000, 24000} {
		from := t.mark()
		m, during, err := t.mintWhilePaused(pause, paused)
		t.cover(rules.LeaseOwnClock)
		if err != nil {
			// INTERNAL: a subprocess port's answer, or the in-process bus's own error.
			var ce *emqerr.Error
			t.check(!errors.As(err, &ce), rules.LeaseOwnClock, "a mint after the lease ran out answers INTERNAL (not a canon refusal) or mints under another lease", "%v", err)
			return
		}
		leases := t.minterLeases()
		again := false // an id under w answered after the pause: the renewals may have landed first
		for _, id := range m.IDs[0] {
			_, got, _ := ids.Split(t.validJob(id))
			if got == w && !during && pause < 24000 {
				again = true
				continue
			}
			// A lease the port took for the mint may have lapsed again by the time the kit reads
			// it (a 300 ms lease, renewals late on a busy machine): its acquisition on the wire
			// since the pause shows it was the port's.
			if got == w || leases[got] == harnessOwner || id <= first || (leases[got] == "" && !t.acquiredSince(from, got)) {
				t.fail(rules.LeaseOwnClock, fmt.Sprintf("after worker %d's lease ran out %s (writes paused %d ms), no id under it; ids under a worker the port leased since, above %s", w, how, pause, first),
					fmt.Sprintf("%s under worker %d (lease %q)", id, got, leases[got]))
			}
		}
		if !again {
			return
		}
		first = m.IDs[0][len(m.IDs[0])-1]
		_, w, _ = ids.Split(t.validJob(first))
	}
}

// acquiredSince tells whether the port sent SET {emq}:minter:<w> … NX (a lease acquisition)
// since the monitor mark from.
func (t *T) acquiredSince(from, w int) bool {
	return t.setSince(from, fmt.Sprintf("{emq}:minter:%d", w), "NX")
}

// setSince tells whether the port sent SET key … with the option flag (NX: an acquisition,
// IFEQ: a renewal or a release) since the monitor mark from.
func (t *T) setSince(from int, key, flag string) bool {
	for _, l := range t.portLines(from) {
		if l.Cmd() == "SET" && argAt(l, 1) == key && slices.ContainsFunc(l.Args[3:], func(a string) bool { return strings.EqualFold(a, flag) }) {
			return true
		}
	}
	return false
}

// mintWhilePaused pauses every write for pause ms, waits 700 ms (the port's 300 ms lease runs out
// by its clock) and mints 3 ids. during tells whether the mint was answered while the pause
// certainly held; the return waits for the pause to end, so that a lease the port took is visible.
func (t *T) mintWhilePaused(pause int64, paused func()) (m protocol.MintResult, during bool, err error) {
	from := t.now()
	t.pauseWrites(pause)
	ends := t.now() + pause // the pause ran between from and this TIME
	if paused != nil {
		paused()
	}
	time.Sleep(700 * time.Millisecond)
	m, err = t.D.Mint(t.ctx, protocol.MintArgs{N: 3})
	during = t.now() < from+pause
	t.waitPast(ends)
	return m, during, err
}

// pauseWrites holds every write of every client for ms (CLIENT PAUSE … WRITE), on every node.
func (t *T) pauseWrites(ms int64) {
	for _, n := range t.admin.Nodes {
		if _, err := n.C.Do(t.ctx, "CLIENT", "PAUSE", ms, "WRITE"); err != nil {
			t.harness("CLIENT PAUSE: %v", err)
		}
	}
}

// clockBackToReal is C05's: the clock aid gives the real clock back, with set_ms absent or 0,
// and with a scale beside it too (B-80: ignored then), at a value other than its default.
func clockBackToReal(t *T) {
	c := t.clocker()
	msOf := func(id string) int64 {
		ms, _, _ := ids.Split(t.validJob(id))
		return protocol.EpochMS + int64(ms)
	}
	for _, back := range []map[string]json.RawMessage{{}, {"set_ms": domains.Raw(0)}, {"scale": domains.Raw(1000)}, {"set_ms": domains.Raw(0), "scale": domains.Raw(1000)}} {
		last := msOf(t.mintN(1, rules.ClockReal)[0])
		t.setClock(c, t.now()-3_600_000, 1, rules.ClockReal) // an hour behind: ids stay at the last ms (A11)
		t.mintN(1, rules.ClockReal)
		_, err := drivers.Raw(t.ctx, t.D, "clock", back)
		t.ok(err, rules.ClockReal, fmt.Sprintf("clock %s", domains.Raw(back)))
		time.Sleep(300 * time.Millisecond)
		now := t.now()
		got := msOf(t.mintN(1, rules.ClockReal)[0])
		t.check(got >= last+250 && got <= now+2000, rules.ClockReal,
			fmt.Sprintf("clock %s: back on the real clock, the next id's ms moved on with it (≥ %d, ≤ server now + 2 s)", domains.Raw(back), last+250),
			"ms %d (the last before the hour behind: %d; server now %d)", got, last, now)
	}
}

// mintAtTheLastMillisecond is C05's: the clock aid reaches the last millisecond a snowflake holds
// (protocol.MaxClockMS), where a mint answers ids of that millisecond, and the first millisecond
// past it, where a mint answers INTERNAL. The clock is nearly frozen (1 ms per scale real ms) for
// each mint; a machine too busy to mint before it moves on gets a slower clock, not a failure.
func mintAtTheLastMillisecond(t *T) {
	clk := t.clocker()
	t.cover(rules.ClockEnd)
	for scale := int64(1000); ; scale *= 4 {
		set := time.Now()
		t.setClock(clk, protocol.MaxClockMS, scale, rules.ClockEnd)
		m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 3})
		if err == nil && len(m.IDs) == 1 && len(m.IDs[0]) == 3 {
			increasing(t, m.IDs[0], "three ids at the last millisecond")
			for _, id := range m.IDs[0] {
				ms, _, _ := ids.Split(t.validJob(id))
				t.check(ms == ids.MaxMillis, rules.ClockEnd, fmt.Sprintf("with the clock at %d, ids at millisecond %d (2⁴²−1)", protocol.MaxClockMS, uint64(ids.MaxMillis)), "%s at millisecond %d", id, ms)
			}
			break
		}
		if took := time.Since(set).Milliseconds(); took < scale || scale >= 64000 {
			t.fail(rules.ClockEnd, fmt.Sprintf("a mint of 3 while the clock reads %d (its last millisecond for %d real ms) answers three ids", protocol.MaxClockMS, scale),
				fmt.Sprintf("%v (%s; the mint took %d ms)", m.IDs, errText(err), took))
		}
	}
	// Past it: the clock is set to the last millisecond at 1 ms per scale real ms and the mint is
	// sent scale real ms after the set is answered, so the clock reads past the last millisecond
	// (INTERNAL is owed) however long anything took. A mint answered within 2·scale real ms of the
	// set's sending read exactly the first millisecond past it (2⁴² after the epoch), where a port
	// that refuses only a millisecond or more later still mints; when the machine was too busy for
	// that, the probe is repeated with a slower clock (the bound on scale ends it, never a failure).
	for scale := int64(100); ; scale *= 4 {
		set := time.Now()
		t.setClock(clk, protocol.MaxClockMS, scale, rules.ClockEnd)
		time.Sleep(time.Duration(scale) * time.Millisecond)
		m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
		took := time.Since(set).Milliseconds()
		edge := took < 2*scale
		read := fmt.Sprintf("past %d", protocol.MaxClockMS)
		if edge {
			read = fmt.Sprintf("%d, one past %d", protocol.MaxClockMS+1, protocol.MaxClockMS)
		}
		t.check(t.answeredInternal(err), rules.ClockEnd, fmt.Sprintf("a mint once the clock reads past %d answers INTERNAL", protocol.MaxClockMS),
			"%v (%s; the clock read %s: set %d real ms before the answer, at 1 ms per %d)", m.IDs, errText(err), read, took, scale)
		if edge || scale >= 25600 {
			break
		}
	}
}

// mintAtTheEpoch is C05's: the clock aid's other edge. set_ms reaches down to the epoch itself
// (Part B's fields table: 1704067200000..6102113711103), the snowflake's millisecond 0 (canon
// §3.1), so a mint while the minter's clock reads it answers ids of millisecond 0: an accepted
// set_ms is a clock the minter mints under (B-79), at both ends of its range. Every worker id but
// 0 is leased to the harness before hello, so the port mints under worker 0 and its ids are the
// smallest the layout holds (JOB00000000000 when its sequence starts at 0): an encoder that
// refuses a zero snowflake, or a worker id of 0, fails here. The clause's port is fresh and has
// minted nothing, so no earlier millisecond holds its ids (A11). The clock moves 1 ms per 1000 s
// (the largest scale), so even a busy machine mints while it reads the epoch.
func mintAtTheEpoch(t *T) {
	t.takeAllBut(0)
	t.helloWith(protocol.HelloArgs{})
	clk := t.clocker()
	t.setClock(clk, protocol.EpochMS, protocol.MaxClockScale, rules.IDEpoch)
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 3})
	t.cover(rules.IDEpoch)
	if err != nil || len(m.IDs) != 1 || len(m.IDs[0]) != 3 {
		t.fail(rules.IDEpoch, fmt.Sprintf("with worker id 0 the only one free, a mint of 3 while the minter's clock reads %d (the epoch, 2024-01-01T00:00:00Z) answers three ids", protocol.EpochMS),
			fmt.Sprintf("%v (%s)", m.IDs, errText(err)))
	}
	increasing(t, m.IDs[0], "three ids at the epoch")
	for _, id := range m.IDs[0] {
		ms, w, _ := ids.Split(t.validJob(id))
		t.check(ms == 0 && w == 0, rules.IDEpoch, fmt.Sprintf("with the clock at %d (the epoch) and worker id 0 the only one free, a fresh port's ids at millisecond 0 under worker 0", protocol.EpochMS),
			"%s at millisecond %d under worker %d", id, ms, w)
	}
}

// answeredInternal says err is the port's INTERNAL answer: an error that is neither a canon
// refusal, nor UNSUPPORTED, nor a fault of the conversation.
func (t *T) answeredInternal(err error) bool {
	var canon *emqerr.Error
	var ue *drivers.UnsupportedError
	f, faulted := t.D.(drivers.Faulter)
	return err != nil && !errors.As(err, &canon) && !errors.As(err, &ue) && !(faulted && f.Fault() != nil)
}
