package bench

import (
	"context"
	"errors"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/echomq/kit/bench/queue"
)

// ticker wakes the open-loop generator at each job's intended instant. Go's timers cannot: on
// Linux an idle runtime waits in epoll with a timeout in whole milliseconds (a sub-millisecond
// timer sleeps a full one), so at 1000 jobs/s a timer-driven generator hands each job over up to
// a millisecond late, and that lateness is inside every latency it measures. The ticker instead
// sleeps in nanosleep(2) on a thread of its own with the kernel's timer slack at its minimum:
// tens of microseconds, with no spinning.
type ticker struct{ slack int }

// defaultSlack is Linux's default timer slack (50 µs), restored before the thread is released.
const defaultSlack = 50_000

func newTicker() *ticker {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return &ticker{slack: defaultSlack}
}

// until sleeps until at (or returns at once if it has passed); false when ctx has ended.
func (t *ticker) until(ctx context.Context, at time.Time) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		w := time.Until(at)
		if w <= 0 {
			return true
		}
		ts := unix.NsecToTimespec(int64(min(w, 100*time.Millisecond)))
		if err := unix.Nanosleep(&ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return queue.Sleep(ctx, w) // no nanosleep: fall back to the runtime's timer
		}
	}
}

// stop gives the thread back with its timer slack restored.
func (t *ticker) stop() {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(t.slack), 0, 0, 0)
	runtime.UnlockOSThread()
}
