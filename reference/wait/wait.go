// Package wait is the one way the kit sleeps: for a while, or until the context ends, whichever
// comes first. The standard library has no such call (time.Sleep ignores a context), so every
// package that paused had its own copy of these lines.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done; it returns ctx's error when ctx ended the wait (also when
// ctx was done already), nil when d passed. d ≤ 0 returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	return SleepOr(ctx, nil, d)
}

// SleepOr is Sleep that also ends early, with nil, when wake is closed: a retry that waits out a
// backoff can go at once when what failed may work again (a nil wake never closes).
func SleepOr(ctx context.Context, wake <-chan struct{}, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	case <-t.C:
		return nil
	}
}
