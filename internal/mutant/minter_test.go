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

// The faulty minter is a copy of the reference minter with defect switches (a defect must live
// here, never in reference/ids). These tests hold the copy to the reference: with no defect on,
// both mint the same ids from the same clock, make the same lease calls, and fail the same way.

// minter is what the bus asks of either.
type minter interface {
	Worker() int
	Owner() string
	Next(ctx context.Context) (string, error)
	Reaffirm(ctx context.Context) error
	Close() error
}

// scriptLeaser keeps leases in memory with the server's semantics (SET NX, SET IFEQ) and logs
// the acquire and release calls; refuse makes every renewal answer "not yours".
type scriptLeaser struct {
	mu     sync.Mutex
	held   map[int]string
	refuse bool
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

func (l *scriptLeaser) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

func (l *scriptLeaser) refuseRenewals() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse = true
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

// both builds the reference minter and the faulty one with no defect, each on its own leaser
// made by leaser, with the same options.
func both(t *testing.T, leaser func() *scriptLeaser, opts func() ids.Options) (ref, cp minter, lr, lc *scriptLeaser, errR, errC error) {
	t.Helper()
	ctx := context.Background()
	lr, lc = leaser(), leaser()
	r, errR := ids.NewMinter(ctx, lr, opts())
	c, errC := newFaultyMinter(ctx, lc, opts(), minterDefects{})
	if errR == nil {
		ref = r
	}
	if errC == nil {
		cp = c
	}
	return ref, cp, lr, lc, errR, errC
}

func TestFaultyMinterWithoutDefectIsTheReference(t *testing.T) {
	ctx := context.Background()
	ref, cp, lr, lc, errR, errC := both(t, func() *scriptLeaser { return newScriptLeaser(5, 6) },
		func() ids.Options {
			return ids.Options{TTL: 10 * time.Second, Owner: "o", Now: countedClock(), Start: func(int) int { return 5 }}
		})
	if errR != nil || errC != nil {
		t.Fatalf("new: reference %v, copy %v", errR, errC)
	}
	if ref.Worker() != 7 || cp.Worker() != 7 || ref.Owner() != cp.Owner() {
		t.Fatalf("workers %d and %d (want 7: 5 and 6 are taken), owners %q and %q", ref.Worker(), cp.Worker(), ref.Owner(), cp.Owner())
	}
	// 10 000 ids: the sequence is spent twice (4096 per ms) and the clock steps back once.
	for i := range 10000 {
		a, err1 := ref.Next(ctx)
		b, err2 := cp.Next(ctx)
		if a != b || (err1 == nil) != (err2 == nil) {
			t.Fatalf("id %d: reference %q (%v), copy %q (%v)", i, a, err1, b, err2)
		}
	}
	for _, m := range []minter{ref, cp} {
		if err := m.Reaffirm(ctx); err != nil {
			t.Fatalf("reaffirm: %v", err)
		}
	}
	closeBoth(t, ctx, ref, cp)
	if a, b := lr.calls(), lc.calls(); !slices.Equal(a, b) {
		t.Errorf("lease calls differ:\nreference %v\ncopy      %v", a, b)
	}
}

// closeBoth closes each minter twice (idempotent, same answer) and checks that neither mints
// after Close.
func closeBoth(t *testing.T, ctx context.Context, ms ...minter) {
	t.Helper()
	for _, m := range ms {
		if err1, err2 := m.Close(), m.Close(); err1 != nil || err2 != nil {
			t.Errorf("close: %v, %v", err1, err2)
		}
		if _, err := m.Next(ctx); !errors.Is(err, ids.ErrClosed) {
			t.Errorf("next after close: %v", err)
		}
	}
}

func TestFaultyMinterWithoutDefectLosesItsLeaseAlike(t *testing.T) {
	ctx := context.Background()
	ref, cp, lr, lc, errR, errC := both(t, func() *scriptLeaser { return newScriptLeaser() },
		func() ids.Options {
			return ids.Options{TTL: 30 * time.Millisecond, Owner: "o", Start: func(int) int { return 3 }}
		})
	if errR != nil || errC != nil {
		t.Fatalf("new: reference %v, copy %v", errR, errC)
	}
	lr.refuseRenewals()
	lc.refuseRenewals()
	for _, m := range []minter{ref, cp} {
		var err error
		for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			_, err = m.Next(ctx)
		}
		if !errors.Is(err, ids.ErrLeaseLost) || !strings.Contains(err.Error(), "worker 3") {
			t.Errorf("after refused renewals: %v, want ErrLeaseLost for worker 3", err)
		}
		if err := m.Reaffirm(ctx); !errors.Is(err, ids.ErrLeaseLost) {
			t.Errorf("reaffirm after the loss: %v", err)
		}
	}
	closeBoth(t, ctx, ref, cp)
	if a, b := lr.calls(), lc.calls(); !slices.Equal(a, b) {
		t.Errorf("lease calls differ:\nreference %v\ncopy      %v", a, b)
	}
}

func TestFaultyMinterWithoutDefectRefusesAlike(t *testing.T) {
	all := make([]int, ids.MaxWorker+1)
	for i := range all {
		all[i] = i
	}
	_, _, _, _, errR, errC := both(t, func() *scriptLeaser { return newScriptLeaser(all...) },
		func() ids.Options { return ids.Options{Owner: "o"} })
	if !errors.Is(errR, ids.ErrNoWorker) || !errors.Is(errC, ids.ErrNoWorker) {
		t.Errorf("every worker taken: reference %v, copy %v", errR, errC)
	}
	_, _, _, _, errR, errC = both(t, func() *scriptLeaser { return newScriptLeaser() },
		func() ids.Options { return ids.Options{TTL: time.Millisecond} })
	if errR == nil || errC == nil || errR.Error() != errC.Error() {
		t.Errorf("a ttl too short: reference %v, copy %v", errR, errC)
	}
}
