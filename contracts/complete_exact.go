package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/echomq/kit/contracts/rules"
)

// completeExact completes (id, token) with the live token and requires exactly complete's effect
// on the whole keyspace: the row and the id's active entry, checkpoint, last error and laneof
// entry are gone; its lane's active count is one lower (absent at zero); the lane rejoins the
// ring's tail when it becomes serviceable; every other key (besides the wake) is unchanged.
func (t *T) completeExact(qn, id string, token int64) {
	q := t.q(qn)
	row := jobKey(q, id)
	touched := []string{row, q.Active(), q.Ckpt(), q.Errors(), q.LaneOf(), q.Lanes(), q.Ring(), q.Wake()}
	before := t.snapshot()
	wantActive, scores := t.zset(q.Active())
	wantActive = slices.DeleteFunc(wantActive, func(m string) bool { return m == id })
	hashes := map[string]map[string]string{}
	for _, h := range []string{q.Ckpt(), q.Errors(), q.LaneOf(), q.Lanes()} {
		hashes[h] = t.hash(h)
	}
	g, lane := hashes[q.LaneOf()][id]
	for _, h := range []string{q.Ckpt(), q.Errors(), q.LaneOf()} {
		delete(hashes[h], id)
	}
	wantLanes := normalLanes(hashes[q.Lanes()])
	wantRing := t.list(q.Ring())
	if lane {
		n, _ := strconv.Atoi(wantLanes["active:"+g])
		wantLanes["active:"+g] = strconv.Itoa(n - 1)
		wantLanes = normalLanes(wantLanes)
		n--
		ceiling, capped := wantLanes["ceiling:"+g]
		c, _ := strconv.Atoi(ceiling)
		_, paused := wantLanes["paused:"+g]
		members, _ := t.zset(laneKey(q, g))
		if !paused && (!capped || n < c) && len(members) > 0 && !slices.Contains(wantRing, g) {
			wantRing = append(wantRing, g)
		}
	}

	t.complete(qn, id, token)

	after := t.snapshot()
	t.cover(rules.Complete)
	for _, k := range slices.Sorted(maps.Keys(union(before, after))) {
		if !slices.Contains(touched, k) && before[k] != after[k] {
			t.fail(rules.Complete, "complete of "+id+" leaves every key it does not own unchanged",
				fmt.Sprintf("%s: %q → %q", k, before[k], after[k]))
		}
	}
	t.check(!t.exists(row), rules.Complete, "no row "+row, "the row is still there: %v", t.hash(row))
	gotActive, gotScores := t.zset(q.Active())
	same := slices.Equal(gotActive, wantActive)
	for _, m := range gotActive {
		same = same && gotScores[m] == scores[m]
	}
	t.check(same, rules.Complete, fmt.Sprintf("active is exactly the others' leases %v", wantActive), "%v", gotActive)
	t.check(maps.Equal(t.hash(q.Ckpt()), hashes[q.Ckpt()]), rules.Complete, fmt.Sprintf("ckpt is exactly the others' %q", hashes[q.Ckpt()]), "%q", t.hash(q.Ckpt()))
	t.check(maps.Equal(t.hash(q.Errors()), hashes[q.Errors()]), rules.CompleteError, fmt.Sprintf("errors is exactly the others' %q", hashes[q.Errors()]), "%q", t.hash(q.Errors()))
	t.check(maps.Equal(t.hash(q.LaneOf()), hashes[q.LaneOf()]), rules.CompleteLane, fmt.Sprintf("laneof is exactly the others' %q", hashes[q.LaneOf()]), "%q", t.hash(q.LaneOf()))
	gotLanes := normalLanes(t.hash(q.Lanes()))
	t.check(maps.Equal(gotLanes, wantLanes), rules.CompleteLane, fmt.Sprintf("lanes is %q (the lane's active count one lower)", wantLanes), "%q", gotLanes)
	gotRing := t.list(q.Ring())
	t.check(slices.Equal(gotRing, wantRing), rules.Lanes, fmt.Sprintf("ring %v (a lane that became serviceable — ids waiting, not paused, below its ceiling — rejoins at the tail; a paused one stays out)", wantRing), "%v", gotRing)
}

// normalLanes drops zero active counts: an absent count and a count of 0 say the same.
func normalLanes(h map[string]string) map[string]string {
	out := maps.Clone(h)
	for f, v := range out {
		if len(f) > 7 && f[:7] == "active:" && v == "0" {
			delete(out, f)
		}
	}
	return out
}

// union is the set of both maps' keys.
func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
