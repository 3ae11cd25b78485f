package queue

import (
	"context"
	"errors"
	"testing"
)

func TestPayloadRoundTrip(t *testing.T) {
	for p, want := range map[string]int64{string(Payload(1764412345123456789)): 1764412345123456789, `{"t": 42}`: 42} {
		got, err := SentAt([]byte(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got != want {
			t.Errorf("%s: got %d, want %d", p, got, want)
		}
	}
	for _, bad := range []string{``, `{}`, `{"t":}`, `{"t":x}`, `{"u":1}`, `{"t":1`} {
		if _, err := SentAt([]byte(bad)); !errors.Is(err, ErrPayload) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestDrainMarks(t *testing.T) {
	fired := 0
	m := NewDrainMarks(3, func() { fired++ })
	m.Started()
	first := m.first.Load()
	m.Started()
	if m.first.Load() != first || first == 0 {
		t.Fatal("first start moved")
	}
	for range 3 {
		m.Ack()
	}
	if err := m.Wait(context.Background(), nil); err != nil || fired != 1 || m.last.Load() < first {
		t.Fatalf("wait %v, after fired %d", err, fired)
	}
	if _, _, err := m.Window(); err != nil {
		t.Fatalf("window: %v", err)
	}
	m2 := NewDrainMarks(2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m2.Wait(ctx, nil); !errors.Is(err, ErrIncomplete) {
		t.Errorf("cancelled wait: %v", err)
	}
	if _, _, err := m2.Window(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("window of an unfinished drain: %v", err)
	}
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	if err := Parallel(100, 4, func(i int) error {
		if i == 7 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("Parallel = %v", err)
	}
}
