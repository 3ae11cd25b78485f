package contracts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/ids"
)

// c05 is contract C05: order.
var c05 = Contract{ID: "C05", Name: "order",
	Rule: "ids minted in sequence, even within one millisecond and across a pool of connections, sort in mint order; claims come oldest first",
	clauses: []clause{
		{name: "clock-back-to-real", body: clockBackToReal},
		{name: "mint-at-the-last-millisecond", body: mintAtTheLastMillisecond},
		{name: "mint-at-the-epoch", body: mintAtTheEpoch, noHello: true},
		fieldsClause(fieldGroup{[]string{"clock"}, ownField}),
		{name: "one-caller-strictly-increasing", body: oneCallerStrictlyIncreasing},
		{name: "parallel-callers", body: parallelCallers},
		{name: "claims-oldest-first", body: claimsOldestFirst},
		{name: "clock-steps-back", body: clockStepsBack},
		{name: "clock-back-relet", body: clockBackRelet},
		{name: "sequence-overflow", body: sequenceOverflow},
	},
}

func oneCallerStrictlyIncreasing(t *T) {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 5000})
	t.ok(err, rules.MintOrder, "mint")
	t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 5000, rules.MintOrder, "one list of 5000 ids", "%d lists", len(m.IDs))
	increasing(t, m.IDs[0], "one caller")
	perMS := map[uint64]int{}
	most := 0
	for _, id := range m.IDs[0] {
		sf, _ := ids.ParseJob(id)
		ms, _, _ := ids.Split(sf)
		perMS[ms]++
		most = max(most, perMS[ms])
	}
	t.check(most > 1, rules.MintOrder, "several ids within one millisecond (the sequence bits in use)", "every id in its own millisecond; the check could not exercise the sequence")
}

func parallelCallers(t *T) {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1000, Parallel: 4})
	t.ok(err, rules.MintOrder, "mint")
	worker := t.portWorker(rules.Minter)
	t.check(len(m.IDs) == 4, rules.MintOrder, "four lists, one per caller", "%d lists", len(m.IDs))
	// The shape holds at n 0 too: parallel lists, each empty (B-38, B-40), not one empty list.
	z, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 0, Parallel: 3})
	t.ok(err, rules.MintOrder, "mint of 0 ids by 3 callers")
	t.check(len(z.IDs) == 3 && len(slices.Concat(z.IDs...)) == 0, rules.MintOrder, "mint n 0 parallel 3: three lists, each empty", "%q", z.IDs)
	seen := map[string]bool{}
	for i, l := range m.IDs {
		t.check(len(l) == 1000, rules.MintOrder, "1000 ids per caller", "caller %d got %d", i, len(l))
		increasing(t, l, fmt.Sprintf("caller %d", i))
		for _, id := range l {
			t.check(!seen[id], rules.MintOrder, "ids never repeat across callers", "%s minted twice", id)
			seen[id] = true
			// One minter, one leased worker id, whatever the callers (Part B mint).
			_, w, _ := ids.Split(t.validJob(id))
			t.check(w == worker, rules.Minter, fmt.Sprintf("every caller's ids under the port's one leased worker id %d", worker), "%s under worker %d", id, w)
		}
	}
}

func claimsOldestFirst(t *T) {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 6})
	t.ok(err, rules.MintOrder, "mint")
	t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 6, rules.MintOrder, "mint n=6 answers one list of six ids", "%v", m.IDs)
	minted := m.IDs[0]
	for _, i := range []int{5, 3, 1, 0, 2, 4} {
		t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: minted[i], PayloadB64: b64(fmt.Sprint(i))})
	}
	var got []string
	for range minted {
		c := t.mustClaim("orders", workLease)
		got = append(got, c.ID)
	}
	t.check(strings.Join(got, ",") == strings.Join(minted, ","), rules.MintOrder, "claims in mint order "+strings.Join(minted, ","), "%s", strings.Join(got, ","))
	t.check(t.claim("orders", workLease) == nil, rules.Claim, "an empty reply once the queue is drained", "another job")
}

func clockStepsBack(t *T) {
	clk := t.clocker()
	// Far ahead and nearly frozen (1 ms per real second): the ids must carry exactly
	// the scripted millisecond, which shows the clock op reaches the minter at all.
	ahead := t.now() + 5000
	t.setClock(clk, ahead, 1000, rules.IDEpoch)
	list := t.mintN(5, rules.IDEpoch)
	want := uint64(sinceEpochMS(ahead))
	t.cover(rules.IDEpoch)
	for _, id := range list {
		if ms, _, _ := ids.Split(t.validJob(id)); ms != want && ms != want+1 {
			t.fail(rules.IDEpoch, fmt.Sprintf("with the minter's clock scripted to %d (Unix ms), ids at millisecond %d since 2024-01-01", ahead, want),
				fmt.Sprintf("%s at millisecond %d", id, ms))
		}
	}
	// One second back, at real speed: the minter keeps minting from its last millisecond.
	t.setClock(clk, ahead-1000, 1, rules.ClockBack)
	back := t.mintN(300, rules.ClockBack)
	t.cover(rules.ClockBack)
	all := append(list, back...)
	for i := len(list); i < len(all); i++ {
		sf, prev := t.validJob(all[i]), t.validJob(all[i-1])
		if all[i] <= all[i-1] || sf <= prev {
			t.fail(rules.ClockBack, "after the clock stepped back 1 s, every id still sorts (and decodes) above the one minted before it",
				fmt.Sprintf("id %d %s after %s", i, all[i], all[i-1]))
		}
		if ms, _, _ := ids.Split(sf); ms < want {
			t.fail(rules.ClockBack, fmt.Sprintf("after the clock stepped back, ids keep the last millisecond %d", want), fmt.Sprintf("%s at millisecond %d", all[i], ms))
		}
	}
}

// clockBackRelet: the minter's clock an hour back, its lease gone from the server and every
// other worker id leased by another minter, a reconnect leases the same worker id again (canon
// §3.4-14 allows it), and the mints after it go on from the last millisecond at once (A11): a
// new lease is no reason to wait for the clock, which would wait the hour out.
func clockBackRelet(t *T) {
	clk := t.clocker()
	last := t.mintN(1, rules.ClockBack)[0]
	w := t.portWorker(rules.ClockBack)
	t.takeAllBut(w)
	t.setClock(clk, t.now()-3_600_000, 1, rules.ClockBack)
	before := t.mintN(3, rules.ClockBack)
	t.freeWorkers([]int{w})
	t.ok(t.D.Reconnect(t.ctx), rules.ClockBack, "reconnect after the lease was gone, the clock an hour back")
	after := t.mintN(3, rules.ClockBack)
	t.cover(rules.ClockBack)
	all := append(append([]string{last}, before...), after...)
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.fail(rules.ClockBack, "the clock an hour back, a reconnect that leased the same worker id again: every id above the one minted before it",
				fmt.Sprintf("id %d %s after %s", i, all[i], all[i-1]))
		}
	}
}

// sequenceOverflow: 5000 ids minted while one scripted millisecond lasts scale real ones
// overflow the 12-bit sequence. A port slower than the scripted millisecond lets its clock move
// on before the 4096th id, rightly: the clause then slows the clock (×4, up to 32 s a scripted
// millisecond) instead of failing a correct port for the machine's speed. A port that leaves
// its millisecond early is caught whatever the speed: no id may stand beyond where the scripted
// clock could have been.
func sequenceOverflow(t *T) {
	clk := t.clocker()
	t.cover(rules.SeqOverflow)
	from := t.now() + 10000
	for scale := int64(500); ; scale *= 4 {
		first, n, spread, elapsed := t.mintAcrossOverflow(clk, from, scale)
		if n == ids.MaxSequence+1 && spread >= 2 {
			return
		}
		if elapsed < scale || scale >= 32000 {
			t.fail(rules.SeqOverflow, fmt.Sprintf("4096 ids in the scripted millisecond %d (its whole sequence), the rest in later ones", first),
				fmt.Sprintf("%d ids in millisecond %d, %d milliseconds in all (the mint took %d real ms, a scripted one lasted %d)", n, first, spread, elapsed, scale))
		}
		from = t.now() + 10000 + (elapsed/scale+2)*1000 // past every millisecond this try used
	}
}

// mintAcrossOverflow scripts the port's clock at unix ms at (scale real ms a scripted one),
// mints 5000 ids and checks each: under one worker id, strictly increasing, never beyond where
// the scripted clock stood. It returns the first scripted millisecond, how many ids it holds,
// how many milliseconds the ids span and how long the mint took.
func (t *T) mintAcrossOverflow(clk drivers.Clocker, at, scale int64) (first uint64, n, spread int, elapsed int64) {
	set := time.Now()
	t.setClock(clk, at, scale, rules.SeqOverflow)
	list := t.mintN(5000, rules.SeqOverflow)
	elapsed = time.Since(set).Milliseconds()
	// The port's clock was set after set: it reads at most this now.
	clockMax := uint64(sinceEpochMS(at) + elapsed/scale)
	perMS := map[uint64]int{}
	_, worker, _ := ids.Split(t.validJob(list[0]))
	for i, id := range list {
		sf := t.validJob(id)
		ms, w, _ := ids.Split(sf)
		perMS[ms]++
		if w != worker {
			t.fail(rules.SeqOverflow, fmt.Sprintf("the sequence never spills into the worker bits: every id under worker %d", worker), fmt.Sprintf("id %d %s under worker %d", i, id, w))
		}
		if ms > clockMax {
			t.fail(rules.SeqOverflow, fmt.Sprintf("past 4095 ids the minter waits for its clock's next millisecond: no id beyond millisecond %d, where the scripted clock stood", clockMax),
				fmt.Sprintf("id %d %s at millisecond %d", i, id, ms))
		}
		if i > 0 && (id <= list[i-1] || sf <= t.validJob(list[i-1])) {
			t.fail(rules.SeqOverflow, "past 4095 ids in one millisecond the minter waits for the next: every id above the one before", fmt.Sprintf("id %d %s after %s", i, id, list[i-1]))
		}
	}
	first = uint64(sinceEpochMS(at))
	return first, perMS[first], len(perMS), elapsed
}

func increasing(t *T, list []string, what string) {
	t.cover(rules.MintOrder)
	for i, id := range list {
		t.validJob(id)
		if i > 0 && id <= list[i-1] {
			t.fail(rules.MintOrder, what+": each id sorts after the one minted before it", fmt.Sprintf("id %d %s after %s", i, id, list[i-1]))
		}
	}
}
