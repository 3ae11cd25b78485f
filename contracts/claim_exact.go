package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// claimExact claims from qn (lane_claim when lane) and requires exactly the claim's effect: the
// oldest id of pending (of the lane at the ring's head) is popped, its row becomes exactly
// {state active, attempts+1, payload unchanged}, active gains it at TIME+lease, the lane's
// active count rises by one, and no other key but the ring and the wake changes. The reply
// carries the row's payload and, on a redelivery, the checkpoint as it stood.
func (t *T) claimExact(qn string, lane bool, lease int64) string {
	q := t.q(qn)
	from := q.Pending()
	var g string
	if lane {
		ring := t.list(q.Ring())
		t.check(len(ring) > 0, rules.Lanes, "a serviceable lane in the ring", "an empty ring")
		g = ring[0]
		from = laneKey(q, g)
	}
	queue, scores := t.zset(from)
	t.check(len(queue) > 0, rules.Claim, "pending work in "+from, "none")
	id := queue[0]
	row := jobKey(q, id)
	before := t.snapshot()
	rowBefore := t.hash(row)
	ckpt, hasCkpt := t.hget(q.Ckpt(), id)
	lanes := normalLanes(t.hash(q.Lanes()))
	active, activeScores := t.zset(q.Active())

	t0 := t.now()
	c := t.claimOnce(qn, lane, lease)
	t1 := t.now()

	attempts, _ := strconv.ParseInt(rowBefore["attempts"], 10, 64)
	t.check(c != nil && c.ID == id && c.Token == attempts+1, rules.Claim,
		fmt.Sprintf("the oldest id %s of %s with token %d", id, from, attempts+1), "%+v", c)
	t.claimedBytes(c, id, rowBefore["payload"], rules.ClaimBytes)
	if attempts > 0 && hasCkpt {
		t.checkpointBytes(c, ckpt)
	} else {
		t.check(c.CheckpointB64 == nil, rules.ClaimCheckpointBytes, "no checkpoint_b64 for "+id, "%v", c.CheckpointB64)
	}
	want := map[string]string{"state": "active", "attempts": strconv.FormatInt(attempts+1, 10), "payload": rowBefore["payload"]}
	got := t.hash(row)
	t.check(maps.Equal(got, want), rules.Row, fmt.Sprintf("row %s exactly %q", id, want), "%q", got)

	after := t.snapshot()
	touched := []string{row, from, q.Active(), q.Wake(), q.Ring(), q.Lanes()}
	t.cover(rules.ClaimExact)
	for _, k := range slices.Sorted(maps.Keys(union(before, after))) {
		if !slices.Contains(touched, k) && before[k] != after[k] {
			t.fail(rules.ClaimExact, "a claim of "+id+" changes no key but its row, "+from+", active, the lane count, the ring and the wake",
				fmt.Sprintf("%s: %q → %q", k, short(before[k]), short(after[k])))
		}
	}
	rest, restScores := t.zset(from)
	ok := slices.Equal(rest, queue[1:])
	for _, m := range rest {
		ok = ok && restScores[m] == scores[m]
	}
	t.check(ok, rules.ClaimExact, fmt.Sprintf("%s is exactly %v after the pop", from, queue[1:]), "%v", rest)
	nowActive, nowScores := t.zset(q.Active())
	wantActive := append(slices.Clone(active), id)
	slices.Sort(wantActive)
	sortedNow := slices.Sorted(slices.Values(nowActive))
	ok = slices.Equal(sortedNow, wantActive)
	for _, m := range active {
		ok = ok && nowScores[m] == activeScores[m]
	}
	t.check(ok, rules.ClaimExact, fmt.Sprintf("active is the earlier leases plus %s", id), "%v", nowActive)
	t.leaseWithin(q.Active(), id, t0, t1, lease, rules.Claim)
	if lane {
		n, _ := strconv.Atoi(lanes["active:"+g])
		lanes["active:"+g] = strconv.Itoa(n + 1)
		gotLanes := normalLanes(t.hash(q.Lanes()))
		t.check(maps.Equal(gotLanes, lanes), rules.Lanes, fmt.Sprintf("lanes %q (active:%s one higher)", lanes, g), "%q", gotLanes)
	} else {
		t.check(before[q.Lanes()] == after[q.Lanes()], rules.ClaimExact, "a plain claim leaves the lanes hash unchanged", "%q → %q", before[q.Lanes()], after[q.Lanes()])
	}
	return id
}

// claimOnce runs one claim or lane_claim.
func (t *T) claimOnce(qn string, lane bool, lease int64) *protocol.ClaimResult {
	if lane {
		return t.laneClaim(qn, lease)
	}
	return t.claim(qn, lease)
}
