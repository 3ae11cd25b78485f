package contracts

import (
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// Limits exercised where they bite: every bound a document states, once at its maximum with
// enough data to fill it (the fields clauses send max and max+1, but on a nearly empty queue).

// scanLimit is a scan op (reap, promote, morgue) whose limit two clauses exercise: limit 10000
// over 10001 entries settles exactly 10000 and leaves one, and limit absent settles exactly the
// field's default (Part B's fields table) over one more than that (morgue lists the oldest deaths
// first).
type scanLimit string

func (op scanLimit) atItsMaximum(t *T) {
	t.scanOver(string(op), protocol.MaxLimit, protocol.MaxLimit, rules.RangeLimit)
}

func (op scanLimit) absentIsItsDefault(t *T) {
	t.scanOver(string(op), 0, fieldDefault(string(op), "limit"), rules.FieldDefault)
}

// fieldDefault is the integer default of an op's optional field in protocol.Fields.
func fieldDefault(op, field string) int {
	for _, f := range protocol.Fields[op] {
		if f.Name == field {
			if n, err := strconv.Atoi(f.Default); err == nil {
				return n
			}
		}
	}
	panic(fmt.Sprintf("contracts: %s.%s has no integer default", op, field))
}

// scanOver plants want+1 entries for op, calls it with limit (0: the field absent) and checks
// that exactly want were settled (or listed) and one left.
func (t *T) scanOver(op string, limit int64, want int, rule rules.Rule) {
	n := want + 1
	q := t.q("orders")
	state := map[string]string{"reap": "active", "promote": "scheduled", "morgue": "dead"}[op]
	from := t.now() - 60_000
	ids := t.lcPlant("orders", state, 1, from, n, func(int) string { return "p" })
	call := fmt.Sprintf("%s with limit %d over %d entries", op, limit, n)
	if limit == 0 {
		call = fmt.Sprintf("%s with limit absent over %d entries", op, n)
	}
	var got int
	switch op {
	case "reap":
		r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: "orders", MaxAttempts: 5, Limit: limit})
		t.ok(err, rule, call)
		got = int(r.Count)
		t.check(t.lcZcard(q.Active()) == 1 && t.lcZcard(q.Pending()) == int64(want), rules.Reap,
			fmt.Sprintf("%d leases back in pending, one left in active", want), "active %d, pending %d", t.lcZcard(q.Active()), t.lcZcard(q.Pending()))
	case "promote":
		r, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders", Limit: limit})
		t.ok(err, rule, call)
		got = int(r.Count)
		t.check(t.lcZcard(q.Scheduled()) == 1 && t.lcZcard(q.Pending()) == int64(want), rules.Promote,
			fmt.Sprintf("%d due jobs pending, one left scheduled", want), "scheduled %d, pending %d", t.lcZcard(q.Scheduled()), t.lcZcard(q.Pending()))
	case "morgue":
		t.tieDeaths(q.Dead(), ids, from)
		m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders", Limit: limit})
		t.ok(err, rule, call)
		got = len(m.Jobs)
		t.cover(rules.MorgueTies)
		for i := range min(got, want) {
			if m.Jobs[i].ID != ids[i] {
				t.fail(rules.MorgueTies, fmt.Sprintf("the %d oldest deaths, oldest first, each run of one death time in id order (B-298)", want),
					fmt.Sprintf("job %d is %s, want %s", i, m.Jobs[i].ID, ids[i]))
			}
		}
	}
	t.check(got == want, rule, fmt.Sprintf("%s settles exactly %d", call, want), "%d", got)
}

// parkAtItsMaximum is C14's: the most consumers the park op takes, each with a job.
func parkAtItsMaximum(t *T) {
	n := protocol.MaxConsumers
	ids := kitIDs(n, 1<<41)
	t.kitEnqueue("orders", ids)
	start := time.Now()
	// The consumers' lease at its maximum too (B-228: 1e14 ms, beyond a time.Duration's 292
	// years): a port that converts it without saturating leases its claims for a negative or
	// wrapped time, and their completes are refused.
	a := protocol.ParkArgs{Queue: "orders", Consumers: n, Jobs: n, LeaseMS: protocol.MaxMS, ParkMS: 1000, TimeoutMS: 20000}
	r := <-t.park(a)
	t.completed(r, start, 20*time.Second, ids, fmt.Sprintf("%d consumers (the most park takes) with a lease of %d ms complete %d jobs", n, protocol.MaxMS, n))
	t.leasedAsAsked(r, a.LeaseMS)
}

// parkLeasePastADuration is C14's: a lease just past what a time.Duration holds (2^63 ns, about
// 9.22e12 ms), well inside the domain: a port that converts it without saturating wraps it to a
// negative time.
func parkLeasePastADuration(t *T) {
	const lease = 9_300_000_000_000
	ids := kitIDs(1, 1<<42)
	t.kitEnqueue("orders", ids)
	start := time.Now()
	a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: lease, ParkMS: 1000, TimeoutMS: 20000}
	t.cover(rules.FieldRange)
	r := <-t.park(a)
	t.completed(r, start, 20*time.Second, ids, fmt.Sprintf("a consumer with a lease of %d ms completes its job", lease))
	t.leasedAsAsked(r, a.LeaseMS)
}

// leasedAsAsked checks that a park's consumers claimed under the park's lease_ms (A16-5: it is
// the consumers' lease; canon §1.4: a client sends the duration, the script takes the time):
// every claim the port ran since the park was sent (claim, claim_batch or lane_claim, each taking
// lease_ms as ARGV[1]) carries exactly lease, and the park's jobs show there was one. A lease
// replaced by a default, scaled by a unit, or clamped to what the port's timers hold completes
// the park's jobs all the same (they are completed at once): only the wire tells. The session
// serves one request at a time, so the park's claims are the only ones in the window.
func (t *T) leasedAsAsked(r parked, lease int64) {
	want := strconv.FormatInt(lease, 10)
	what := fmt.Sprintf("every claim of a park with lease_ms %d carries that lease (ARGV[1] %s): the park's lease_ms is its consumers' lease (A16-5)", lease, want)
	t.cover(rules.FieldRange)
	n := 0
	for _, l := range t.portCommands(r.from) {
		name := t.evalshaOf(l)
		if name != lua.Claim && name != lua.LaneClaim && name != lua.ClaimBatch {
			continue
		}
		n++
		if _, argv, err := wire.EvalKeys(l.Args); err != nil || len(argv) == 0 || argv[0] != want {
			t.fail(rules.FieldRange, what, fmt.Sprintf("%s with ARGV %q", name, argv), l)
		}
	}
	t.check(n > 0 || len(r.res.Jobs) == 0, rules.FieldRange, what, "%d jobs completed and no claim from the port on the wire", len(r.res.Jobs))
}

// tieDeaths gives every other run of 1001 deaths (planted by lcPlant at from, from+1, …) one death
// time, the first of the run's, as a reap that buries more than a page of leases at one server
// TIME does: a morgue that pages by death time past the last one it read skips the rest of the
// tie; one that orders a tie by anything but id disorders it.
func (t *T) tieDeaths(dead string, ids []string, from int64) {
	var cmds [][]any
	for i := range ids {
		if run := i / 1001; run%2 == 0 {
			cmds = append(cmds, []any{"ZADD", dead, "XX", from + int64(run*1001), ids[i]})
		}
	}
	if _, err := t.admin.pipeline(t.ctx, cmds...); err != nil {
		t.harness("tie the planted deaths: %v", err)
	}
}
