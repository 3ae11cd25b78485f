// Package await holds the kit's tests' waits: each waits on the event it means, polling, and
// gives up only when nothing moves, never because a fixed time has passed. A busy machine makes
// a wait longer, never a correct tree red; only a wait that sees no progress at all for Stall
// (a tree that stopped, or a hang) fails its test.
package await

import (
	"testing"
	"time"
)

// Stall is how long a wait goes on without progress before it fails its test: far beyond any
// pause a busy machine makes, so it ends only a wait that will never be met.
const Stall = time.Minute

// poll is the interval between two looks.
const poll = 2 * time.Millisecond

// Until waits until cond holds. It fails the test, naming what it waited for, when cond has not
// held for Stall: cond has no progress to show, so the whole wait is bounded.
func Until(t testing.TB, what string, cond func() bool) { until(t, what, cond, Stall) }

func until(t testing.TB, what string, cond func() bool, stall time.Duration) {
	t.Helper()
	for end := time.Now().Add(stall); !cond(); time.Sleep(poll) {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s without it happening", stall, what)
			return
		}
	}
}

// Count waits until n() reaches want. Every change of n() is progress and restarts the Stall
// bound, so a slow machine draining a long backlog never fails it; n() standing still for Stall
// below want does. It returns the last count.
func Count(t testing.TB, what string, n func() int64, want int64) int64 {
	t.Helper()
	return count(t, what, n, want, Stall)
}

func count(t testing.TB, what string, n func() int64, want int64, stall time.Duration) int64 {
	t.Helper()
	last, moved := n(), time.Now()
	for last < want {
		time.Sleep(poll)
		switch now := n(); {
		case now != last:
			last, moved = now, time.Now()
		case time.Since(moved) > stall:
			t.Fatalf("%s: stuck at %d of %d for %s", what, last, want, stall)
			return last
		}
	}
	return last
}
