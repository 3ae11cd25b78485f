package ids

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
)

// memLeaser is an in-memory lease store with SET NX PX semantics, for unit tests only; the bus's
// tests run the minter against Valkey.
type memLeaser struct {
	mu       sync.Mutex
	held     map[int]memLease
	renewErr error // when set, Renew fails with it
	renewals int   // renewals granted
}

type memLease struct {
	owner   string
	expires time.Time
}

func newMemLeaser() *memLeaser { return &memLeaser{held: map[int]memLease{}} }

func (l *memLeaser) Acquire(_ context.Context, w int, owner string, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[w]; ok && time.Now().Before(h.expires) {
		return false, nil
	}
	l.held[w] = memLease{owner, time.Now().Add(ttl)}
	return true, nil
}

func (l *memLeaser) Renew(_ context.Context, w int, owner string, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewErr != nil {
		return false, l.renewErr
	}
	if h, ok := l.held[w]; !ok || h.owner != owner || !time.Now().Before(h.expires) {
		return false, nil
	}
	l.held[w] = memLease{owner, time.Now().Add(ttl)}
	l.renewals++
	return true, nil
}

func (l *memLeaser) renewed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.renewals)
}

func (l *memLeaser) Release(_ context.Context, w int, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[w]; ok && h.owner == owner {
		delete(l.held, w)
	}
	return nil
}

func (l *memLeaser) holder(w int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[w]; ok && time.Now().Before(h.expires) {
		return h.owner
	}
	return ""
}

func (l *memLeaser) steal(w int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[w] = memLease{"thief", time.Now().Add(time.Hour)}
}

// fakeClock stands still until it has been read `every` times, then moves one millisecond; set
// moves it anywhere, backwards included.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
	every int
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.every > 0 && c.reads%c.every == 0 {
		c.t = c.t.Add(time.Millisecond)
	}
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func newTestMinter(t *testing.T, l Leaser, opts Options) *Minter {
	t.Helper()
	m, err := NewMinter(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMinterConcurrentStrictlyIncreasing(t *testing.T) {
	m := newTestMinter(t, newMemLeaser(), Options{})
	const goroutines, each = 8, 3000
	out := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				sf, err := m.NextSnowflake(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				out[g] = append(out[g], sf)
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for g, sfs := range out {
		for i, sf := range sfs {
			if seen[sf] {
				t.Fatalf("duplicate snowflake %d", sf)
			}
			seen[sf] = true
			if i > 0 && sf <= sfs[i-1] {
				t.Fatalf("goroutine %d: %d after %d", g, sf, sfs[i-1])
			}
			if _, w, _ := Split(sf); w != m.Worker() {
				t.Fatalf("worker %d in snowflake, leased %d", w, m.Worker())
			}
		}
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d ids, want %d", len(seen), goroutines*each)
	}
}

func TestMinterSequenceOverflowWaitsForNextMillisecond(t *testing.T) {
	start := Epoch.Add(time.Hour)
	clk := &fakeClock{t: start, every: 0}
	m := newTestMinter(t, newMemLeaser(), Options{Now: clk.Now})
	ctx := context.Background()
	var last uint64
	for i := 0; i <= MaxSequence; i++ {
		sf, err := m.NextSnowflake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms, _, seq := Split(sf)
		if ms != uint64(time.Hour.Milliseconds()) || seq != i {
			t.Fatalf("id %d: ms=%d seq=%d", i, ms, seq)
		}
		last = sf
	}
	// The 4097th must wait: with the clock frozen it blocks until the context ends.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := m.NextSnowflake(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("4097th id in a frozen millisecond: %v, want it to wait", err)
	}
	// Once the clock moves, it mints at the next millisecond with sequence 0.
	clk.mu.Lock()
	clk.every = 3
	clk.mu.Unlock()
	sf, err := m.NextSnowflake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, _, seq := Split(sf)
	if sf <= last || ms != uint64(time.Hour.Milliseconds())+1 || seq != 0 {
		t.Fatalf("after overflow: ms=%d seq=%d (last %d, got %d)", ms, seq, last, sf)
	}
}

func TestMinterClockStepsBack(t *testing.T) {
	start := Epoch.Add(time.Hour)
	clk := &fakeClock{t: start}
	m := newTestMinter(t, newMemLeaser(), Options{Now: clk.Now})
	ctx := context.Background()
	first, err := m.NextSnowflake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk.set(start.Add(-5 * time.Second))
	prev := first
	for i := 0; i < 100; i++ {
		sf, err := m.NextSnowflake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sf <= prev {
			t.Fatalf("clock stepped back: %d after %d", sf, prev)
		}
		if ms, _, _ := Split(sf); ms != uint64(time.Hour.Milliseconds()) {
			t.Fatalf("ms %d: want the last minted millisecond", ms)
		}
		prev = sf
	}
	clk.set(start.Add(time.Second))
	sf, err := m.NextSnowflake(ctx)
	if err != nil || sf <= prev {
		t.Fatalf("clock forward again: %d after %d (%v)", sf, prev, err)
	}
}

func TestMinterClockBeforeEpoch(t *testing.T) {
	clk := &fakeClock{t: Epoch.Add(-time.Millisecond)}
	m := newTestMinter(t, newMemLeaser(), Options{Now: clk.Now})
	if _, err := m.Next(context.Background()); !errors.Is(err, ErrClock) {
		t.Fatalf("clock before epoch: %v, want ErrClock", err)
	}
}

func TestMinterJobIDs(t *testing.T) {
	m := newTestMinter(t, newMemLeaser(), Options{})
	prev := ""
	for range 1000 {
		id, err := m.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseJob(id); err != nil {
			t.Fatalf("minted %q: %v", id, err)
		}
		if id <= prev {
			t.Fatalf("%q after %q", id, prev)
		}
		prev = id
	}
}

func TestMintersLeaseDistinctWorkers(t *testing.T) {
	l := newMemLeaser()
	same := func(int) int { return 1023 }
	a := newTestMinter(t, l, Options{Start: same})
	b := newTestMinter(t, l, Options{Start: same})
	if a.Worker() != 1023 || b.Worker() != 0 {
		t.Fatalf("workers %d, %d: want 1023 then wrap to 0", a.Worker(), b.Worker())
	}
	if a.Owner() == b.Owner() || len(a.Owner()) != 32 {
		t.Fatalf("owners %q %q: want distinct random tokens", a.Owner(), b.Owner())
	}
	if l.holder(1023) != a.Owner() || l.holder(0) != b.Owner() {
		t.Fatal("the store does not hold the minters' leases")
	}
}

func TestMinterNoFreeWorker(t *testing.T) {
	l := newMemLeaser()
	for w := 0; w <= MaxWorker; w++ {
		l.steal(w)
	}
	if _, err := NewMinter(context.Background(), l, Options{}); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("all leased: %v, want ErrNoWorker", err)
	}
}

func TestMinterRenewsAndStopsWhenLeaseLost(t *testing.T) {
	l := newMemLeaser()
	// A lease of a second, renewed every third: a renewal late by two thirds of a second lapses
	// it, which no busy machine does (a 60 ms lease did: baseline of issue 29).
	m := newTestMinter(t, l, Options{TTL: time.Second})
	// Outlive two TTLs, counted in renewals (seven thirds of a TTL): renewal must keep it minting.
	await.Count(t, "seven renewals", l.renewed, 7)
	if _, err := m.Next(context.Background()); err != nil {
		t.Fatalf("after two TTLs with renewal: %v", err)
	}
	if l.holder(m.Worker()) != m.Owner() {
		t.Fatal("lease not renewed in the store")
	}
	l.steal(m.Worker())
	waitLost(t, m)
}

func TestMinterStopsWhenRenewalKeepsFailing(t *testing.T) {
	l := newMemLeaser()
	m := newTestMinter(t, l, Options{TTL: 60 * time.Millisecond})
	l.mu.Lock()
	l.renewErr = errors.New("connection refused")
	l.mu.Unlock()
	waitLost(t, m)
}

func waitLost(t *testing.T, m *Minter) {
	t.Helper()
	var err error
	await.Until(t, "the minter to stop minting without its lease", func() bool {
		_, err = m.Next(context.Background())
		return err != nil
	})
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("want ErrLeaseLost, got %v", err)
	}
}

func TestMinterCloseReleasesWithoutLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	l := newMemLeaser()
	m, err := NewMinter(context.Background(), l, Options{TTL: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if l.holder(m.Worker()) != "" {
		t.Fatal("Close left the lease held")
	}
	if _, err := m.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	select {
	case <-m.done:
	default:
		t.Fatal("renewal goroutine still running after Close")
	}
	await.Until(t, fmt.Sprintf("the goroutines back to the %d before NewMinter", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// TestMinterAfterFloor: a minter leased with Options.After mints above it at once whatever its
// clock says behind it — on after's millisecond under the same or a higher worker id, on the
// next millisecond (once the clock gets there) under a lower one.
func TestMinterAfterFloor(t *testing.T) {
	at := uint64(time.Hour.Milliseconds())
	for _, c := range []struct {
		name            string
		floorWorker     int
		wantMs, wantSeq uint64
	}{
		{"same worker", 5, at, 8},
		{"higher worker", 4, at, 0},
		{"lower worker", 6, at + 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &fakeClock{t: Epoch.Add(time.Hour - time.Minute)} // a minute behind the floor
			l := newMemLeaser()
			after := Compose(at, c.floorWorker, 7)
			m := newTestMinter(t, l, Options{Now: clk.Now, Start: func(int) int { return 5 }, After: after})
			ctx := context.Background()
			if c.wantMs > at { // every id of the floor's millisecond under worker 5 sorts below it
				short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
				if sf, err := m.NextSnowflake(short); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("with the clock behind the floor: %d, %v; want it to wait for the next millisecond", sf, err)
				}
				clk.set(Epoch.Add(time.Hour + time.Millisecond))
			}
			sf, err := m.NextSnowflake(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ms, w, seq := Split(sf)
			if sf <= after || w != 5 || ms != c.wantMs || uint64(seq) != c.wantSeq {
				t.Fatalf("first id after the floor %d: ms %d worker %d seq %d (%d)", after, ms, w, seq, sf)
			}
		})
	}
}
