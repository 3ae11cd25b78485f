package mutant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/reference/ids"
)

// The minter mutants hook the reference minter (a defect must live here, never in
// reference/ids). These tests hold each hook to its defect, and the hooked minter without a
// defect to the reference: the same ids from the same clock, the same lease calls.

// scriptLeaser keeps leases in memory with the server's semantics (SET NX, SET IFEQ) and logs
// its calls; refuse makes every renewal answer "not yours", hang makes it fail.
type scriptLeaser struct {
	mu     sync.Mutex
	held   map[int]string
	refuse bool
	hang   bool
	log    []string
}

func newScriptLeaser(taken ...int) *scriptLeaser {
	l := &scriptLeaser{held: map[int]string{}}
	for _, w := range taken {
		l.held[w] = "someone-else"
	}
	return l
}

func (l *scriptLeaser) Acquire(_ context.Context, w int, owner string, _ time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf("acquire %d", w))
	if _, ok := l.held[w]; ok {
		return false, nil
	}
	l.held[w] = owner
	return true, nil
}

func (l *scriptLeaser) Renew(_ context.Context, w int, owner string, _ time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf("renew %d", w))
	if l.hang {
		return false, context.DeadlineExceeded
	}
	return !l.refuse && l.held[w] == owner, nil
}

func (l *scriptLeaser) Release(_ context.Context, w int, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf("release %d", w))
	if l.held[w] == owner {
		delete(l.held, w)
	}
	return nil
}

func (l *scriptLeaser) calls(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.log {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func (l *scriptLeaser) set(f func(l *scriptLeaser)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// clock is a clock a test sets by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: ids.Epoch.Add(400 * 24 * time.Hour)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countedClock advances one millisecond every 4200 readings (more than the 4096 ids of one
// millisecond, so the sequence is spent and the minter waits) and steps back 100 ms for ten
// readings in the middle: a function of how often it is read, never of wall time, so two
// minters that read it alike see the same times.
func countedClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	base := ids.Epoch.Add(400 * 24 * time.Hour)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n >= 9000 && n < 9010 {
			return base.Add(-100 * time.Millisecond)
		}
		return base.Add(time.Duration(n/4200) * time.Millisecond)
	}
}

// hooked is a hooked minter with defects d on l, worker 5 (when free), owner "o", clock now.
func hooked(t *testing.T, d minterDefects, l ids.Leaser, ttl time.Duration, now func() time.Time) *hookedMinter {
	t.Helper()
	m, err := d.newMinter(context.Background(), l, ids.Options{TTL: ttl, Now: now, Start: func(int) int { return 5 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// mint mints n ids, failing the test on an error.
func mint(t *testing.T, m *hookedMinter, n int) []string {
	t.Helper()
	var out []string
	for range n {
		id, err := m.Next(context.Background())
		if err != nil {
			t.Fatalf("id %d: %v", len(out), err)
		}
		out = append(out, id)
	}
	return out
}

func split(t *testing.T, id string) (ms uint64, worker, seq int) {
	t.Helper()
	sf, err := ids.ParseJob(id)
	if err != nil {
		t.Fatalf("%q: %v", id, err)
	}
	return ids.Split(sf)
}

func TestHookedMinterWithoutDefectIsTheReference(t *testing.T) {
	ctx := context.Background()
	lr, lh := newScriptLeaser(5, 6), newScriptLeaser(5, 6)
	opt := func() ids.Options {
		return ids.Options{TTL: 10 * time.Second, Owner: "o", Now: countedClock(), Start: func(int) int { return 5 }}
	}
	ref, err := ids.NewMinter(ctx, lr, opt())
	if err != nil {
		t.Fatal(err)
	}
	hm, err := minterDefects{}.newMinter(ctx, lh, opt())
	if err != nil {
		t.Fatal(err)
	}
	if ref.Worker() != 7 || hm.Worker() != 7 {
		t.Fatalf("workers %d and %d, want 7: 5 and 6 are taken", ref.Worker(), hm.Worker())
	}
	// 10 000 ids: the sequence is spent twice (4096 per ms) and the clock steps back once.
	for i := range 10000 {
		a, err1 := ref.Next(ctx)
		b, err2 := hm.Next(ctx)
		if a != b || err1 != nil || err2 != nil {
			t.Fatalf("id %d: reference %q (%v), hooked %q (%v)", i, a, err1, b, err2)
		}
	}
	if err1, err2 := ref.Reaffirm(ctx), hm.Reaffirm(ctx); err1 != nil || err2 != nil {
		t.Fatalf("reaffirm: %v, %v", err1, err2)
	}
	_, _ = ref.Close(), hm.Close()
	if _, err := hm.Next(ctx); !errors.Is(err, ids.ErrClosed) {
		t.Errorf("next after close: %v", err)
	}
	if a, b := lr.calls(""), lh.calls(""); !slices.Equal(a, b) {
		t.Errorf("lease calls differ:\nreference %v\nhooked    %v", a, b)
	}
}

// TestClockDefects: each defect of the mint step gives the ids its catalogue entry says.
func TestClockDefects(t *testing.T) {
	t.Run("step-back", func(t *testing.T) {
		c := newClock()
		m := hooked(t, minterDefects{StepBack: true}, newScriptLeaser(), time.Minute, c.now)
		before := mint(t, m, 3)
		c.add(-100 * time.Millisecond)
		back := mint(t, m, 2)
		if back[0] >= before[2] || back[1] <= back[0] {
			t.Errorf("after the clock stepped back: %v then %v, want smaller ids, still increasing among themselves", before, back)
		}
		c.add(200 * time.Millisecond) // past every id handed out: the reference's again
		if after := mint(t, m, 1); after[0] <= before[2] {
			t.Errorf("past the last id: %s, not above %s", after[0], before[2])
		}
	})
	spend := func(t *testing.T, d minterDefects) (ms uint64, worker int, ids4097 []string, c *clock, m *hookedMinter) {
		c = newClock()
		m = hooked(t, d, newScriptLeaser(), time.Minute, c.now)
		got := mint(t, m, ids.MaxSequence+2) // the clock stands still: the 4097th overflows
		ms, worker, _ = split(t, got[0])
		return ms, worker, got, c, m
	}
	t.Run("sequence-wraps", func(t *testing.T) {
		ms, _, got, _, _ := spend(t, minterDefects{SeqWrap: true})
		if got[ids.MaxSequence+1] != got[0] {
			t.Errorf("the 4097th id %s, want the first again (%s, ms %d)", got[ids.MaxSequence+1], got[0], ms)
		}
	})
	t.Run("sequence-carries", func(t *testing.T) {
		ms, w, got, _, _ := spend(t, minterDefects{SeqCarry: true})
		gms, gw, gseq := split(t, got[ids.MaxSequence+1])
		if gms != ms || gw != w+1 || gseq != 0 {
			t.Errorf("the 4097th id is ms %d worker %d seq %d, want ms %d worker %d seq 0", gms, gw, gseq, ms, w+1)
		}
	})
	t.Run("sequence-borrows", func(t *testing.T) {
		ms, _, got, c, m := spend(t, minterDefects{SeqBorrow: true})
		if gms, _, gseq := split(t, got[ids.MaxSequence+1]); gms != ms+1 || gseq != 0 {
			t.Errorf("the 4097th id is ms %d seq %d, want ms %d (ahead of the clock) seq 0", gms, gseq, ms+1)
		}
		c.add(time.Millisecond) // the clock catches up: the ids go on increasing, none repeated
		more := append(got[ids.MaxSequence+1:], mint(t, m, 3)...)
		if !slices.IsSorted(more) || len(slices.Compact(slices.Clone(more))) != len(more) {
			t.Errorf("after the clock caught up: %v", more)
		}
	})
}

// TestLayoutDefects: the epoch, layout, alphabet and padding defects write the reference's
// snowflake otherwise.
func TestLayoutDefects(t *testing.T) {
	c := newClock()
	ref := hooked(t, minterDefects{}, newScriptLeaser(), time.Minute, c.now)
	id := mint(t, ref, 1)[0]
	ms, w, seq := split(t, id)
	for _, x := range []struct {
		d    minterDefects
		want func(got string) bool
	}{
		{minterDefects{UnixEpoch: true}, func(got string) bool {
			gms, gw, _ := split(t, got)
			return gms == uint64(c.now().UnixMilli()) && gw == w
		}},
		{minterDefects{SwapFields: true}, func(got string) bool {
			sf, _ := ids.ParseJob(got)
			return sf&ids.MaxWorker == uint64(w) && sf>>ids.WorkerBits&ids.MaxSequence == uint64(seq)
		}},
		{minterDefects{LowerFirst: true}, func(got string) bool {
			return len(got) == 14 && got != id && strings.ContainsAny(got[3:], "abcdefghijklmnopqrstuvwxyz")
		}},
		{minterDefects{NoPad: true}, func(got string) bool { return strings.HasPrefix(got, "JOB") && len(got) < 14 }},
	} {
		if got := x.d.encode(ids.Compose(ms, w, seq)); !x.want(got) {
			t.Errorf("%+v writes %s as %s", x.d, id, got)
		}
	}
}

// TestLeaseDefects: each lease defect leases, renews or trusts as its catalogue entry says.
func TestLeaseDefects(t *testing.T) {
	ctx := context.Background()
	t.Run("squats", func(t *testing.T) {
		m := hooked(t, minterDefects{Squat: true}, newScriptLeaser(5), time.Minute, nil)
		if m.Worker() != 5 {
			t.Errorf("worker %d, want 5, which another minter holds", m.Worker())
		}
	})
	t.Run("short-scan", func(t *testing.T) {
		all := make([]int, ids.MaxWorker)
		for i := range all {
			all[i] = i // every worker id but 1023
		}
		_, err := minterDefects{ShortScan: true}.newMinter(ctx, newScriptLeaser(all...), ids.Options{})
		if !errors.Is(err, ids.ErrNoWorker) {
			t.Errorf("with only 1023 free: %v, want ErrNoWorker", err)
		}
	})
	t.Run("scan-one-short", func(t *testing.T) {
		var all []int
		for w := range ids.MaxWorker + 1 {
			if w != 99 {
				all = append(all, w) // every worker id but 99, the one before the scan's start
			}
		}
		from100 := ids.Options{Start: func(int) int { return 100 }}
		if m, err := (minterDefects{}).newMinter(ctx, newScriptLeaser(all...), from100); err != nil || m.Worker() != 99 {
			t.Fatalf("no defect: %v, want worker 99", err)
		}
		if _, err := (minterDefects{MissLast: true}).newMinter(ctx, newScriptLeaser(all...), from100); !errors.Is(err, ids.ErrNoWorker) {
			t.Errorf("with only 99 free, the scan from 100: %v, want ErrNoWorker", err)
		}
	})
	t.Run("guesses", func(t *testing.T) {
		l := newScriptLeaser(5)
		m := hooked(t, minterDefects{Guess: true}, l, time.Minute, nil)
		ok, err := leaseHook{l, m.d, new(int)}.Renew(ctx, 5, m.Owner(), time.Minute)
		if m.Worker() != 5 || !ok || err != nil || len(l.calls("acquire")) != 0 || len(l.calls("renew")) != 0 {
			t.Errorf("worker %d, renewal %v (%v), lease calls %v: want 5, taken without asking", m.Worker(), ok, err, l.calls(""))
		}
	})
	// The renewal defects, on the lease hook alone: what the minter is told of a renewal.
	for _, c := range []struct {
		name       string
		d          minterDefects
		server     func(l *scriptLeaser)
		want, sent bool
	}{
		{"never-renews", minterDefects{NoRenew: true}, func(*scriptLeaser) {}, true, false},
		{"ignores-loss", minterDefects{IgnoreLoss: true}, func(l *scriptLeaser) { l.refuse = true }, true, true},
		{"no-local-expiry, a renewal hangs", minterDefects{NoLocalExpiry: true}, func(l *scriptLeaser) { l.hang = true }, true, true},
		{"no-local-expiry, a renewal refused", minterDefects{NoLocalExpiry: true}, func(l *scriptLeaser) { l.refuse = true }, false, true},
		{"no defect, a renewal refused", minterDefects{}, func(l *scriptLeaser) { l.refuse = true }, false, true},
	} {
		l := newScriptLeaser()
		if ok, err := l.Acquire(ctx, 3, "o", time.Minute); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.set(c.server)
		ok, err := leaseHook{l, c.d, new(int)}.Renew(ctx, 3, "o", time.Minute)
		if ok != c.want || err != nil || (len(l.calls("renew")) > 0) != c.sent {
			t.Errorf("%s: renewed %v (%v), sent %v; want %v, sent %v", c.name, ok, err, l.calls("renew"), c.want, c.sent)
		}
	}
	t.Run("trusts-local", func(t *testing.T) {
		l := newScriptLeaser()
		m := hooked(t, minterDefects{TrustLocal: true}, l, time.Minute, nil)
		l.set(func(l *scriptLeaser) { l.refuse = true })
		if err := m.Reaffirm(ctx); err != nil || len(l.calls("renew")) != 0 {
			t.Errorf("reaffirm %v after %v: want nil, asking nothing", err, l.calls("renew"))
		}
	})
	t.Run("fixed-owner", func(t *testing.T) {
		m := hooked(t, minterDefects{FixedOwner: true}, newScriptLeaser(), time.Minute, nil)
		if m.Owner() != "emq-minter" {
			t.Errorf("owner %q", m.Owner())
		}
	})
}
