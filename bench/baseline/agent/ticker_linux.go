package main

import (
	"runtime"
	"syscall"
	"time"
)

// sleeper waits for each of the generator's instants as the bench's own generator does: in
// nanosleep(2) on a thread of its own, the kernel's timer slack at its minimum (Go's timers
// round a sub-millisecond wait up to a millisecond on an idle runtime). The standard library's
// syscall package only, so the agent builds against any tree.
type sleeper struct{}

const prSetTimerslack = 29 // PR_SET_TIMERSLACK

func newSleeper() sleeper {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	return sleeper{}
}

func (sleeper) until(at time.Time) {
	for w := time.Until(at); w > 0; w = time.Until(at) {
		ts := syscall.NsecToTimespec(int64(min(w, 100*time.Millisecond)))
		_ = syscall.Nanosleep(&ts, nil)
	}
}

// stop restores Linux's default slack (50 µs) and releases the thread.
func (sleeper) stop() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 50_000, 0)
	runtime.UnlockOSThread()
}
