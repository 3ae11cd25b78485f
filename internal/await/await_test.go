package await

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fake is a testing.TB that records a failure instead of ending the test.
type fake struct {
	testing.TB
	failure string
}

func (f *fake) Helper() {}
func (f *fake) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
}

// A count that keeps moving is waited for however long it takes in all; one that stops below
// its target fails once it has stood still for the stall bound.
func TestCount(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 40 {
			time.Sleep(5 * time.Millisecond) // 200 ms in all, each step well within the bound
			n.Add(1)
		}
	}()
	f := &fake{}
	if got := count(f, "the count", n.Load, 40, time.Minute); got != 40 || f.failure != "" {
		t.Fatalf("count = %d (%q), want 40 and no failure", got, f.failure)
	}
	f = &fake{}
	if got := count(f, "a stuck count", n.Load, 41, 20*time.Millisecond); got != 40 || f.failure != "a stuck count: stuck at 40 of 41 for 20ms" {
		t.Fatalf("count = %d (%q), want 40 and the failure", got, f.failure)
	}
}

func TestUntil(t *testing.T) {
	var done atomic.Bool
	go func() { time.Sleep(10 * time.Millisecond); done.Store(true) }()
	f := &fake{}
	if until(f, "done", done.Load, time.Minute); f.failure != "" {
		t.Fatalf("until failed: %q", f.failure)
	}
	if until(f, "never", func() bool { return false }, 20*time.Millisecond); f.failure != "waited 20ms for never without it happening" {
		t.Fatalf("until of a condition that never holds: %q", f.failure)
	}
}
