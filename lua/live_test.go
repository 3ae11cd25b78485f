package lua_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// validArgs are well-formed ARGV for each script, for job id and lane g.
func validArgs(name, jobID, g, digest string) []any {
	switch name {
	case lua.Fence:
		return []any{lua.Version, digest}
	case lua.Enqueue:
		return []any{jobID, "p", 0}
	case lua.Claim, lua.LaneClaim:
		return []any{60000}
	case lua.Complete:
		return []any{jobID, 1}
	case lua.Retry:
		return []any{jobID, 1, 3, 0, "e"}
	case lua.Fail:
		return []any{jobID, 1, "e"}
	case lua.Reap:
		return []any{3, 100}
	case lua.Promote:
		return []any{100}
	case lua.Extend:
		return []any{jobID, 1, 60000}
	case lua.Checkpoint:
		return []any{jobID, 1, "c"}
	case lua.Revive, lua.Purge:
		return []any{jobID}
	case lua.Pause, lua.Resume:
		return []any{}
	case lua.LaneEnqueue:
		return []any{jobID, g, "p", 0}
	case lua.LanePause, lua.LaneResume:
		return []any{g}
	case lua.LaneCeiling:
		return []any{g, 2}
	case lua.EnqueueBatch:
		return []any{jobID, "p", 0}
	case lua.ClaimBatch:
		return []any{60000, 10}
	case lua.CompleteBatch:
		return []any{jobID, 1}
	}
	panic("no args for " + name)
}

func with(args []any, i int, v any) []any {
	out := slices.Clone(args)
	out[i] = v
	return out
}

// Every script refuses malformed KEYS and ARGV with EMQARG and changes nothing.
func TestLiveRefusals(t *testing.T) {
	r := newRig(t)
	r.ok(lua.Fence, "", "", lua.Version, r.b.Digest())
	r.enqueue(id(1), "p1", 0)
	r.mustClaim(lua.Claim, 60000)
	r.laneEnqueue(id(2), "g1", "p2", 0)
	r.enqueue(id(3), "p3", 0)
	other := strings.Replace(r.q.Pending(), r.q.Name(), "other", 1)

	for _, s := range r.b.Scripts() {
		ks := r.keysFor(s.Name, id(1), "g1")
		args := validArgs(s.Name, id(1), "g1", r.b.Digest())
		arg := r.refused
		want := emqerr.Arg
		arg(want, s.Name, nil, args...)
		arg(want, s.Name, append(slices.Clone(ks), r.q.Wake()), args...)
		arg(want, s.Name, swap(ks, len(ks)-1, "foo{x}"), args...)
		arg(want, s.Name, swap(ks, 0, "foo:{"+r.q.Name()+"}:pending"), args...)
		if len(ks) > 1 {
			arg(want, s.Name, ks[:len(ks)-1], args...)
			arg(want, s.Name, swap(ks, len(ks)-1, other), args...)
		}
		if len(args) > 0 {
			arg(want, s.Name, ks, args[:len(args)-1]...)
		}
		arg(want, s.Name, ks, append(slices.Clone(args), "extra")...)
		for i, desc := range append(slices.Clone(s.Args), s.RepArgs...) {
			switch {
			case strings.HasPrefix(desc, "id "):
				arg(want, s.Name, ks, with(args, i, id(99))...) // disagrees with the row key
				arg(want, s.Name, ks, with(args, i, "ORD"+id(1)[3:])...)
				arg(want, s.Name, ks, with(args, i, "")...)
			case strings.HasPrefix(desc, "lane g"):
				arg(want, s.Name, ks, with(args, i, "BAD")...)
				arg(want, s.Name, ks, with(args, i, "")...)
				if s.Name != lua.LanePause {
					arg(want, s.Name, ks, with(args, i, "g2")...) // disagrees with the lane key
				}
			case strings.Contains(desc, "(integer"):
				for _, bad := range []string{"x", "1.5", "-1", "", "1e3", " 1", "99999999999999999999", "100000000000001"} {
					arg(want, s.Name, ks, with(args, i, bad)...)
				}
			case strings.HasPrefix(desc, "digest"):
				arg(want, s.Name, ks, with(args, i, strings.ToUpper(r.b.Digest()))...)
				arg(want, s.Name, ks, with(args, i, r.b.Digest()[:39])...)
			case strings.HasPrefix(desc, "version"):
				arg(want, s.Name, ks, with(args, i, "")...)
			}
		}
	}
}

func swap(ks []string, i int, k string) []string {
	out := slices.Clone(ks)
	out[i] = k
	return out
}

func TestLiveFence(t *testing.T) {
	r := newRig(t)
	d := r.b.Digest()
	if v := r.ok(lua.Fence, "", "", lua.Version, d); v.Text() != "installed" {
		t.Fatalf("first fence: %q", v.Text())
	}
	if h := r.hash("{emq}:bundle"); len(h) != 2 || h["version"] != lua.Version || h["digest"] != d {
		t.Fatalf("bundle hash %v", h)
	}
	if v := r.ok(lua.Fence, "", "", lua.Version, d); v.Text() != "ok" {
		t.Fatalf("second fence: %q", v.Text())
	}
	zero := strings.Repeat("0", 40)
	ks := r.keysFor(lua.Fence, "", "")
	r.refused(emqerr.Version, lua.Fence, ks, lua.Version, zero)
	r.refused(emqerr.Version, lua.Fence, ks, "echomq:1.9.0", d)
	_, err := r.run(lua.Fence, ks, "echomq:1.9.0", zero)
	if want := "EMQVERSION want echomq:1.9.0/" + zero + " have " + lua.Version + "/" + d; err.Error() != want {
		t.Fatalf("mismatch message %q, want %q", err, want)
	}
}

func TestLiveEnqueueClaim(t *testing.T) {
	r := newRig(t)
	if _, ok := r.claim(lua.Claim, 1000); ok {
		t.Fatal("claim on an empty queue returned a job")
	}
	if ks := r.scan(); len(ks) != 0 {
		t.Fatalf("an empty claim wrote %v", ks)
	}
	if v := r.enqueue(id(1), "p1", 0); v.Int != 1 {
		t.Fatalf("enqueue = %v", v)
	}
	if h := r.hash(r.row(id(1))); len(h) != 3 || h["state"] != "pending" || h["attempts"] != "0" || h["payload"] != "p1" {
		t.Fatalf("row %v", h)
	}
	if s, ok := r.score(r.q.Pending(), id(1)); !ok || s != 0 {
		t.Fatalf("pending score %d %v", s, ok)
	}
	if w := r.members(r.q.Wake()); len(w) != 1 {
		t.Fatalf("wake %v", w)
	}
	// Duplicate: 0 and not a byte changes.
	before := r.snapshot()
	if v := r.enqueue(id(1), "other", 0); v.Int != 0 {
		t.Fatalf("duplicate enqueue = %v", v)
	}
	if !equalSnap(before, r.snapshot()) {
		t.Fatal("duplicate enqueue changed the keyspace")
	}
	bin := "\x00\xff\r\n$-1\r\n"
	r.enqueue(id(3), bin, 0)
	r.enqueue(id(2), "", 0)
	if got := r.members(r.q.Pending()); !slices.Equal(got, []string{id(1), id(2), id(3)}) {
		t.Fatalf("pending order %v", got)
	}
	t0 := r.now()
	r.enqueue(id(4), "later", 60000)
	t1 := r.now()
	if s, _ := r.score(r.q.Scheduled(), id(4)); s < t0+60000 || s > t1+60000 || r.state(id(4)) != "scheduled" {
		t.Fatalf("scheduled at %d, want within [%d, %d]; state %s", s, t0+60000, t1+60000, r.state(id(4)))
	}

	r.do("DEL", r.q.Wake())
	t0 = r.now()
	c := r.mustClaim(lua.Claim, 30000)
	t1 = r.now()
	if c.id != id(1) || c.payload != "p1" || c.token != 1 || c.ckpt != nil {
		t.Fatalf("claim %+v", c)
	}
	if h := r.hash(r.row(id(1))); len(h) != 3 || h["state"] != "active" || h["attempts"] != "1" {
		t.Fatalf("claimed row %v", h)
	}
	if s, _ := r.score(r.q.Active(), id(1)); s < t0+30000 || s > t1+30000 {
		t.Fatalf("lease %d, want within [%d, %d]", s, t0+30000, t1+30000)
	}
	if len(r.members(r.q.Wake())) != 1 {
		t.Fatal("claim did not re-arm the wake with work remaining")
	}
	if c := r.mustClaim(lua.Claim, 30000); c.id != id(2) || c.payload != "" {
		t.Fatalf("second claim %+v", c)
	}
	r.do("DEL", r.q.Wake())
	if c := r.mustClaim(lua.Claim, 30000); c.id != id(3) || c.payload != bin {
		t.Fatalf("third claim %+v", c)
	}
	if len(r.members(r.q.Wake())) != 0 {
		t.Fatal("claim re-armed the wake with nothing pending")
	}
	if _, ok := r.claim(lua.Claim, 30000); ok {
		t.Fatal("claim took a scheduled job")
	}

	// Queue pause is atomic with the claim; resume re-arms the wake.
	r.ok(lua.Pause, "", "")
	r.enqueue(id(5), "p5", 0)
	if _, ok := r.claim(lua.Claim, 30000); ok {
		t.Fatal("claim on a paused queue")
	}
	r.do("DEL", r.q.Wake())
	r.ok(lua.Resume, "", "")
	if len(r.members(r.q.Wake())) != 1 || r.hash(r.q.Meta())["paused"] != "" {
		t.Fatal("resume with work pending: wake not armed or still paused")
	}
	if c := r.mustClaim(lua.Claim, 30000); c.id != id(5) {
		t.Fatalf("after resume %+v", c)
	}
}

var fenced = []string{lua.Complete, lua.Retry, lua.Fail, lua.Extend, lua.Checkpoint}

func TestLiveTokenFence(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(1), "p1", 0)
	r.enqueue(id(2), "p2", 0)
	r.enqueue(id(3), "p3", 0)
	c := r.mustClaim(lua.Claim, 60000)
	for _, name := range fenced {
		ks := r.keysFor(name, id(1), "")
		r.refused(emqerr.Stale, name, ks, with(validArgs(name, id(1), "", ""), 1, 2)...) // wrong token
		r.refused(emqerr.Stale, name, r.keysFor(name, id(9), ""), validArgs(name, id(9), "", "")...)
		r.refused(emqerr.Stale, name, r.keysFor(name, id(2), ""), validArgs(name, id(2), "", "")...) // pending
	}
	if v := r.ok(lua.Complete, id(1), "", id(1), c.token); v.Int != 1 {
		t.Fatalf("live token complete = %v", v)
	}
	// A lease that has passed confers nothing, even before the reaper runs.
	c = r.mustClaim(lua.Claim, 1)
	time.Sleep(10 * time.Millisecond)
	for _, name := range fenced {
		r.refused(emqerr.Stale, name, r.keysFor(name, c.id, ""), validArgs(name, c.id, "", "")...)
	}
	_, err := r.run(lua.Complete, r.keysFor(lua.Complete, c.id, ""), c.id, 1)
	if !strings.Contains(err.Error(), "lease passed") {
		t.Fatalf("expired lease refusal %q: want it to say why", err)
	}
}

func TestLiveCompleteLeavesNothing(t *testing.T) {
	r := newRig(t)
	r.laneEnqueue(id(1), "g1", "p", 0)
	c := r.mustClaim(lua.LaneClaim, 60000)
	if v := r.ok(lua.Retry, id(1), "", id(1), c.token, 5, 0, "boom"); v.Text() != "retried" {
		t.Fatalf("retry = %q", v.Text())
	}
	if got := r.members(r.lane("g1")); !slices.Equal(got, []string{id(1)}) {
		t.Fatalf("retried lane job not back in its lane: %v", got)
	}
	c = r.mustClaim(lua.LaneClaim, 60000)
	if c.token != 2 || c.lane != "g1" {
		t.Fatalf("second lane claim %+v", c)
	}
	r.ok(lua.Checkpoint, id(1), "", id(1), 2, "half")
	r.ok(lua.Complete, id(1), "", id(1), 2)
	for _, k := range r.scan() {
		if k != r.q.Wake() {
			t.Errorf("complete left %s: %v", k, r.hash(k))
		}
	}
}

func TestLiveRetryPromote(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(1), "p1", 0)
	c := r.mustClaim(lua.Claim, 60000)
	r.do("DEL", r.q.Wake())
	if v := r.ok(lua.Retry, id(1), "", id(1), c.token, 3, 0, "e1"); v.Text() != "retried" {
		t.Fatalf("retry = %q", v.Text())
	}
	if r.state(id(1)) != "pending" || r.hash(r.q.Errors())[id(1)] != "e1" || r.exists(r.q.Active()) ||
		len(r.members(r.q.Wake())) != 1 || !slices.Equal(r.members(r.q.Pending()), []string{id(1)}) {
		t.Fatal("retry with delay 0: want pending, error kept, lease gone, wake armed")
	}
	c = r.mustClaim(lua.Claim, 60000)
	if c.token != 2 {
		t.Fatalf("redelivery token %d, want 2", c.token)
	}
	// A backoff of an hour: the promote below runs before the due time on any machine. Then the
	// due time passes on the server's clock without an hour's wait: the score is the due time,
	// and the test moves it behind TIME (what an hour would do).
	t0 := r.now()
	r.ok(lua.Retry, id(1), "", id(1), 2, 3, 3600000, "e2")
	s, _ := r.score(r.q.Scheduled(), id(1))
	if s < t0+3600000 || s > r.now()+3600000 || r.state(id(1)) != "scheduled" || r.hash(r.q.Errors())[id(1)] != "e2" {
		t.Fatalf("retry with backoff: score %d (t0 %d), state %s", s, t0, r.state(id(1)))
	}
	if v := r.ok(lua.Promote, "", "", 100); v.Int != 0 {
		t.Fatalf("promote before due = %d", v.Int)
	}
	r.do("ZADD", r.q.Scheduled(), "XX", r.now()-1, id(1))
	r.do("DEL", r.q.Wake())
	if v := r.ok(lua.Promote, "", "", 100); v.Int != 1 || r.state(id(1)) != "pending" || len(r.members(r.q.Wake())) != 1 {
		t.Fatalf("promote when due = %d, state %s", v.Int, r.state(id(1)))
	}
	c = r.mustClaim(lua.Claim, 60000)
	if c.token != 3 {
		t.Fatalf("third life token %d", c.token)
	}
	t0 = r.now()
	if v := r.ok(lua.Retry, id(1), "", id(1), 3, 3, 0, "e3"); v.Text() != "dead" {
		t.Fatalf("retry at max = %q", v.Text())
	}
	if s, ok := r.score(r.q.Dead(), id(1)); !ok || s < t0 || r.state(id(1)) != "dead" || r.hash(r.q.Errors())[id(1)] != "e3" ||
		r.exists(r.q.Pending()) || r.exists(r.q.Active()) {
		t.Fatal("retry at max attempts: want dead at TIME with the last error")
	}
}

func TestLiveFailRevivePurge(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(1), "p1", 0)
	c := r.mustClaim(lua.Claim, 60000)
	r.ok(lua.Checkpoint, id(1), "", id(1), c.token, "ck")
	t0 := r.now()
	if v := r.ok(lua.Fail, id(1), "", id(1), c.token, "bad"); v.Int != 1 {
		t.Fatalf("fail = %v", v)
	}
	if s, ok := r.score(r.q.Dead(), id(1)); !ok || s < t0 || r.state(id(1)) != "dead" ||
		r.hash(r.q.Errors())[id(1)] != "bad" || r.exists(r.q.Active()) {
		t.Fatal("fail: want dead at TIME with its error, lease gone")
	}
	if v := r.ok(lua.Revive, id(2), "", id(2)); v.Int != 0 {
		t.Fatal("revive of an absent job")
	}
	r.do("DEL", r.q.Wake())
	if v := r.ok(lua.Revive, id(1), "", id(1)); v.Int != 1 {
		t.Fatal("revive of a dead job")
	}
	if h := r.hash(r.row(id(1))); h["state"] != "pending" || h["attempts"] != "1" || r.exists(r.q.Dead()) ||
		r.exists(r.q.Errors()) || len(r.members(r.q.Wake())) != 1 {
		t.Fatalf("revived row %v", h)
	}
	if v := r.ok(lua.Revive, id(1), "", id(1)); v.Int != 0 {
		t.Fatal("revive of a pending job")
	}
	c = r.mustClaim(lua.Claim, 60000)
	if c.token != 2 || c.ckpt == nil || *c.ckpt != "ck" {
		t.Fatalf("claim after revive %+v", c)
	}
	r.refused(emqerr.Arg, lua.Purge, r.keysFor(lua.Purge, id(1), ""), id(2))
	before := r.snapshot()
	if v := r.ok(lua.Purge, id(1), "", id(1)); v.Int != 0 || !equalSnap(before, r.snapshot()) {
		t.Fatal("purge of an active job changed something")
	}
	r.ok(lua.Fail, id(1), "", id(1), 2, "bad again")
	if v := r.ok(lua.Purge, id(1), "", id(1)); v.Int != 1 {
		t.Fatal("purge of a dead job")
	}
	for _, k := range r.scan() {
		if k != r.q.Wake() {
			t.Errorf("purge left %s", k)
		}
	}
}

// C11: one job, two lives, one counter.
func TestLiveReap(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(1), "p1", 0)
	r.enqueue(id(2), "p2", 0)
	// The zombie's lease outlasts its checkpoint on any machine; its last act shortens it to 1 ms,
	// so its death is noticed without a long wait.
	zombie := r.mustClaim(lua.Claim, 60000)
	r.ok(lua.Checkpoint, id(1), "", id(1), zombie.token, "half")
	live := r.mustClaim(lua.Claim, 60000)
	r.ok(lua.Extend, id(1), "", id(1), zombie.token, 1)
	time.Sleep(10 * time.Millisecond) // at least: the zombie's lease has passed
	r.do("DEL", r.q.Wake())
	if v := r.ok(lua.Reap, "", "", 5, 100); v.Int != 1 {
		t.Fatalf("reap = %d, want 1", v.Int)
	}
	if h := r.hash(r.row(id(1))); h["state"] != "pending" || h["attempts"] != "1" ||
		!slices.Equal(r.members(r.q.Pending()), []string{id(1)}) || len(r.members(r.q.Wake())) != 1 {
		t.Fatalf("reaped row %v", h)
	}
	if r.state(live.id) != "active" {
		t.Fatal("reap touched a live lease")
	}
	r.refused(emqerr.Stale, lua.Complete, r.keysFor(lua.Complete, id(1), ""), id(1), zombie.token)
	c := r.mustClaim(lua.Claim, 60000)
	if c.id != id(1) || c.token != 2 || c.ckpt == nil || *c.ckpt != "half" {
		t.Fatalf("redelivery %+v", c)
	}
	r.refused(emqerr.Stale, lua.Complete, r.keysFor(lua.Complete, id(1), ""), id(1), zombie.token)
	r.ok(lua.Complete, id(1), "", id(1), c.token)

	// At max attempts the reaper sends the job to the morgue.
	r.enqueue(id(3), "p3", 0)
	r.mustClaim(lua.Claim, 1)
	time.Sleep(10 * time.Millisecond)
	if v := r.ok(lua.Reap, "", "", 1, 100); v.Int != 1 || r.state(id(3)) != "dead" || r.hash(r.q.Errors())[id(3)] != "lease expired" {
		t.Fatalf("reap at max: %d, state %s", v.Int, r.state(id(3)))
	}

	// The scan is bounded by limit.
	for n := 4; n <= 6; n++ {
		r.enqueue(id(n), "p", 0)
		r.mustClaim(lua.Claim, 1)
	}
	time.Sleep(10 * time.Millisecond)
	if a, b := r.ok(lua.Reap, "", "", 5, 2).Int, r.ok(lua.Reap, "", "", 5, 2).Int; a != 2 || b != 1 {
		t.Fatalf("bounded reap: %d then %d, want 2 then 1", a, b)
	}

	// A reaped lane job returns to its lane and the lane rejoins the ring.
	r.ok(lua.LaneCeiling, "", "g1", "g1", 1)
	r.laneEnqueue(id(7), "g1", "p", 0)
	r.mustClaim(lua.LaneClaim, 1)
	r.laneEnqueue(id(8), "g1", "p", 0)
	if r.exists(r.q.Ring()) {
		t.Fatal("lane at its ceiling is in the ring")
	}
	time.Sleep(10 * time.Millisecond)
	r.ok(lua.Reap, "", "", 5, 100)
	if got := r.members(r.lane("g1")); !slices.Equal(got, []string{id(7), id(8)}) || !slices.Equal(r.members(r.q.Ring()), []string{"g1"}) {
		t.Fatalf("after lane reap: lane %v ring %v", got, r.members(r.q.Ring()))
	}
	if _, ok := r.hash(r.q.Lanes())["active:g1"]; ok {
		t.Fatal("lane active count left behind")
	}
}

func TestLiveExtend(t *testing.T) {
	r := newRig(t)
	r.enqueue(id(1), "p1", 0)
	c := r.mustClaim(lua.Claim, 30000) // shorter than the extension, and outlasting the checks
	old, _ := r.score(r.q.Active(), id(1))
	t0 := r.now()
	v := r.ok(lua.Extend, id(1), "", id(1), c.token, 60000)
	if got, _ := r.score(r.q.Active(), id(1)); v.Type != resp.Integer || got != v.Int || v.Int < t0+60000 || v.Int <= old {
		t.Fatalf("extend reply %v, score %d, old %d, t0 %d", v, got, old, t0)
	}
	r.refused(emqerr.Stale, lua.Extend, r.keysFor(lua.Extend, id(1), ""), id(1), c.token+1, 60000)
}

// serviceable computes, from the keyspace alone, which lanes the ring must hold.
func (r *rig) serviceable(lanes []string) []string {
	h := r.hash(r.q.Lanes())
	var out []string
	for _, g := range lanes {
		active, _ := strconv.Atoi(h["active:"+g])
		ceiling, hasCeiling := h["ceiling:"+g]
		n, _ := strconv.Atoi(ceiling)
		if h["paused:"+g] == "" && (!hasCeiling || active < n) && r.do("ZCARD", r.lane(g)).Int > 0 {
			out = append(out, g)
		}
	}
	return out
}

func (r *rig) checkRing(lanes []string) []string {
	r.t.Helper()
	ring := r.members(r.q.Ring())
	got := slices.Clone(ring)
	sort.Strings(got)
	if want := r.serviceable(lanes); !slices.Equal(got, want) {
		r.t.Fatalf("ring %v, serviceable %v", ring, want)
	}
	if len(slices.Compact(slices.Clone(got))) != len(got) {
		r.t.Fatalf("ring %v holds a lane twice", ring)
	}
	return ring
}

// C12 and C13: rotation, ceilings, lane pause.
func TestLiveLanes(t *testing.T) {
	r := newRig(t)
	lanes := []string{"a", "b", "c"}
	for n, g := range []string{"a", "b", "c", "a", "b"} {
		r.laneEnqueue(id(n+1), g, g+"-payload", 0)
		r.checkRing(lanes)
	}
	if got := r.members(r.q.Ring()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("ring %v", got)
	}
	tokens := map[string]int64{}
	for _, want := range []struct{ id, lane string }{{id(1), "a"}, {id(2), "b"}, {id(3), "c"}, {id(4), "a"}, {id(5), "b"}} {
		c := r.mustClaim(lua.LaneClaim, 60000)
		if c.id != want.id || c.lane != want.lane || c.payload != want.lane+"-payload" || c.token != 1 {
			t.Fatalf("lane claim %+v, want %v", c, want)
		}
		tokens[c.id] = c.token
		r.checkRing(lanes)
	}
	if _, ok := r.claim(lua.LaneClaim, 60000); ok {
		t.Fatal("lane claim with an empty ring")
	}
	if h := r.hash(r.q.Lanes()); h["active:a"] != "2" || h["active:b"] != "2" || h["active:c"] != "1" {
		t.Fatalf("lane counts %v", h)
	}
	// A lane at its ceiling answers empty and reopens on complete.
	r.ok(lua.LaneCeiling, "", "a", "a", 1)
	r.laneEnqueue(id(6), "a", "p", 0)
	r.checkRing(lanes)
	if r.exists(r.q.Ring()) {
		t.Fatal("lane above its ceiling joined the ring")
	}
	r.ok(lua.Complete, id(1), "", id(1), 1)
	r.checkRing(lanes)
	r.do("DEL", r.q.Wake())
	r.ok(lua.Complete, id(4), "", id(4), 1)
	if !slices.Equal(r.checkRing(lanes), []string{"a"}) || len(r.members(r.q.Wake())) != 1 {
		t.Fatal("complete below the ceiling: lane a must rejoin and the wake arm")
	}
	if c := r.mustClaim(lua.LaneClaim, 60000); c.id != id(6) {
		t.Fatalf("claim %+v", c)
	}
	r.checkRing(lanes)
	// Raising the ceiling reopens a lane with work.
	r.laneEnqueue(id(7), "a", "p", 0)
	r.checkRing(lanes)
	r.do("DEL", r.q.Wake())
	r.ok(lua.LaneCeiling, "", "a", "a", 2)
	if !slices.Equal(r.checkRing(lanes), []string{"a"}) || len(r.members(r.q.Wake())) != 1 {
		t.Fatal("raised ceiling: lane a must rejoin and the wake arm")
	}
	r.ok(lua.LaneCeiling, "", "a", "a", 0)
	if _, ok := r.hash(r.q.Lanes())["ceiling:a"]; ok {
		t.Fatal("ceiling 0 must remove the ceiling")
	}
	// A paused lane keeps its backlog and leaves the ring; resume returns it.
	r.laneEnqueue(id(8), "b", "p", 0)
	r.ok(lua.LanePause, "", "", "b")
	if !slices.Equal(r.checkRing(lanes), []string{"a"}) || !slices.Equal(r.members(r.lane("b")), []string{id(8)}) {
		t.Fatal("paused lane b: want it out of the ring with its backlog")
	}
	if c := r.mustClaim(lua.LaneClaim, 60000); c.lane != "a" {
		t.Fatalf("claim from a paused lane: %+v", c)
	}
	if _, ok := r.claim(lua.LaneClaim, 60000); ok {
		t.Fatal("claim with only a paused lane")
	}
	r.do("DEL", r.q.Wake())
	r.ok(lua.LaneResume, "", "b", "b")
	if !slices.Equal(r.checkRing(lanes), []string{"b"}) || len(r.members(r.q.Wake())) != 1 {
		t.Fatal("resume: lane b must rejoin and the wake arm")
	}
	// A queue-wide pause holds lane claims too.
	r.ok(lua.Pause, "", "")
	if _, ok := r.claim(lua.LaneClaim, 60000); ok {
		t.Fatal("lane claim on a paused queue")
	}
	r.do("DEL", r.q.Wake())
	r.ok(lua.Resume, "", "")
	if len(r.members(r.q.Wake())) != 1 {
		t.Fatal("resume with a lane serviceable did not arm the wake")
	}
	if c := r.mustClaim(lua.LaneClaim, 60000); c.id != id(8) {
		t.Fatalf("after resume %+v", c)
	}
	r.checkRing(lanes)
}

// Starvation is gated: with N serviceable lanes a lane with work waits at most N-1 lane claims.
func TestLiveLaneStarvation(t *testing.T) {
	r := newRig(t)
	lanes := []string{"a", "b", "c", "d"}
	n := 0
	for _, g := range lanes {
		for range 3 {
			n++
			r.laneEnqueue(id(n), g, "p", 0)
		}
	}
	// One job in a late lane; other lanes keep getting work behind it.
	last := map[string]int{}
	for step := range 12 {
		c := r.mustClaim(lua.LaneClaim, 60000)
		if prev, ok := last[c.lane]; ok && step-prev != len(lanes) {
			t.Fatalf("lane %s served at steps %d and %d: want every %d", c.lane, prev, step, len(lanes))
		}
		last[c.lane] = step
		r.checkRing(lanes)
	}
}

// A random walk over every script; after each step the keyspace must be consistent: each row
// in exactly the set its state names, rows of exactly three fields, lane counts equal to the
// active rows of each lane, the ring equal to the serviceable lanes.
func TestLiveRandomWalk(t *testing.T) {
	r := newRig(t)
	rng := rand.New(rand.NewPCG(11, 12))
	lanes := []string{"x", "y", "z"}
	tokens := map[string]int64{}
	var all []string
	next := 0
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	for step := 0; step < 400; step++ {
		switch op := rng.IntN(14); op {
		case 0, 1:
			next++
			jid := id(next)
			all = append(all, jid)
			delay := []int{0, 0, 0, 5}[rng.IntN(4)]
			if rng.IntN(2) == 0 {
				r.enqueue(jid, "p", delay)
			} else {
				g := pick(lanes)
				r.laneEnqueue(jid, g, "p", delay)
			}
		case 2, 3:
			name := []string{lua.Claim, lua.LaneClaim, lua.ClaimBatch}[rng.IntN(3)]
			lease := []int{60000, 60000, 2}[rng.IntN(3)]
			if name == lua.ClaimBatch {
				for _, c := range r.claimBatch(lease, 1+rng.IntN(3)) {
					tokens[c.id] = c.token
				}
			} else if c, ok := r.claim(name, lease); ok {
				tokens[c.id] = c.token
			}
		case 4, 5, 6:
			if len(all) == 0 {
				continue
			}
			jid := pick(all)
			name := []string{lua.Complete, lua.Retry, lua.Fail, lua.Extend, lua.Checkpoint}[rng.IntN(5)]
			args := validArgs(name, jid, "", "")
			args[1] = max(tokens[jid], 1)
			if name == lua.Retry {
				args[3] = []int{0, 5}[rng.IntN(2)]
			}
			if _, err := r.run(name, r.keysFor(name, jid, ""), args...); err != nil && !errors.Is(err, emqerr.Stale) {
				t.Fatalf("step %d %s: %v", step, name, err)
			}
		case 7:
			g := pick(lanes)
			switch rng.IntN(3) {
			case 0:
				r.ok(lua.LanePause, "", "", g)
			case 1:
				r.ok(lua.LaneResume, "", g, g)
			case 2:
				r.ok(lua.LaneCeiling, "", g, g, rng.IntN(3))
			}
		case 8:
			r.ok(lua.Reap, "", "", 3, 100)
		case 9:
			r.ok(lua.Promote, "", "", 100)
		case 10:
			if len(all) > 0 {
				jid := pick(all)
				r.ok([]string{lua.Revive, lua.Purge}[rng.IntN(2)], jid, "", jid)
			}
		case 11:
			time.Sleep(3 * time.Millisecond)
		case 12: // a batch of 1..4 new or known ids, some repeated
			var jobs []any
			for range 1 + rng.IntN(4) {
				jid := ""
				if len(all) > 0 && rng.IntN(4) == 0 {
					jid = pick(all)
				} else {
					next++
					jid = id(next)
					all = append(all, jid)
				}
				jobs = append(jobs, jid, "p", []int{0, 0, 5}[rng.IntN(3)])
			}
			r.enqueueBatch(jobs...)
		case 13: // complete a batch of pairs, live or stale
			if len(all) == 0 {
				continue
			}
			var ids []string
			var toks []int64
			for range 1 + rng.IntN(4) {
				jid := pick(all)
				ids = append(ids, jid)
				toks = append(toks, max(tokens[jid], 1)+int64(rng.IntN(4)/3))
			}
			for i, err := range r.completeBatch(ids, toks) {
				if err != nil && !errors.Is(err, emqerr.Stale) {
					t.Fatalf("step %d complete_batch pair %d: %v", step, i, err)
				}
			}
		}
		r.consistent(step, all, lanes)
	}
}

func (r *rig) consistent(step int, all, lanes []string) {
	r.t.Helper()
	where := map[string][]string{}
	for _, set := range []string{"pending", "active", "scheduled", "dead"} {
		k := r.q.Prefix() + set
		for _, m := range r.members(k) {
			where[m] = append(where[m], set)
		}
	}
	laneOf := r.hash(r.q.LaneOf())
	for _, g := range lanes {
		for _, m := range r.members(r.lane(g)) {
			where[m] = append(where[m], "lane:"+g)
			if laneOf[m] != g {
				r.t.Fatalf("step %d: %s in lane %s but laneof says %q", step, m, g, laneOf[m])
			}
		}
	}
	activeIn := map[string]int{}
	for _, jid := range all {
		h := r.hash(r.row(jid))
		if len(h) == 0 {
			if len(where[jid]) != 0 {
				r.t.Fatalf("step %d: no row for %s but it is in %v", step, jid, where[jid])
			}
			continue
		}
		if len(h) != 3 || h["payload"] != "p" {
			r.t.Fatalf("step %d: row %s = %v", step, jid, h)
		}
		want := h["state"]
		if want == "pending" && laneOf[jid] != "" {
			want = "lane:" + laneOf[jid]
		}
		if !slices.Equal(where[jid], []string{want}) {
			r.t.Fatalf("step %d: %s state %s but in %v", step, jid, h["state"], where[jid])
		}
		if h["state"] == "active" && laneOf[jid] != "" {
			activeIn[laneOf[jid]]++
		}
	}
	counts := r.hash(r.q.Lanes())
	for _, g := range lanes {
		if got, _ := strconv.Atoi(counts["active:"+g]); got != activeIn[g] {
			r.t.Fatalf("step %d: active:%s = %d, %d active rows", step, g, got, activeIn[g])
		}
	}
	r.checkRing(lanes)
}
