package ids

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A long wait for the clock's next millisecond must not lapse a lease that is being renewed:
// the minter waits without holding the lock the renewal records itself under. The wait (3 s)
// is twice the lease (1.5 s): a renewal held up by the wait would lapse it; a renewal every
// 500 ms leaves a busy machine a second of slack (a 150 ms lease renewed every 50 ms did not).
func TestMinterLongWaitKeepsRenewedLease(t *testing.T) {
	var clk ScriptedClock
	clk.Set(Epoch.Add(time.Hour), 3000) // one millisecond per 3000 real ones
	m := newTestMinter(t, newMemLeaser(), Options{TTL: 1500 * time.Millisecond, Now: clk.Now})
	var last uint64
	for i := 0; i <= MaxSequence+1; i++ {
		sf, err := m.NextSnowflake(context.Background())
		if err != nil {
			t.Fatalf("id %d: %v", i, err)
		}
		if i > 0 && sf <= last {
			t.Fatalf("id %d: %d after %d", i, sf, last)
		}
		last = sf
	}
	if ms, _, seq := Split(last); seq != 0 || ms != uint64(time.Hour.Milliseconds())+1 {
		t.Fatalf("the 4097th id at ms %d seq %d, want the next millisecond, seq 0", ms, seq)
	}
}

// Reaffirm (a reconnect's duty) asks the server: a lease taken meanwhile is lost at once.
func TestMinterReaffirmFindsStolenLease(t *testing.T) {
	l := newMemLeaser()
	m := newTestMinter(t, l, Options{})
	if err := m.Reaffirm(context.Background()); err != nil {
		t.Fatalf("reaffirm a held lease: %v", err)
	}
	l.steal(m.Worker())
	if err := m.Reaffirm(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("reaffirm a stolen lease: %v, want ErrLeaseLost", err)
	}
	if _, err := m.Next(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("mint after a stolen lease: %v, want ErrLeaseLost", err)
	}
}
