package subprocess

import (
	"os"
	"syscall"
	"testing"
)

// TestGroupTicks reads a stat line whose command holds ") " and spaces: only the fields after
// the last ')' count, and only for the line's own process group.
// spin keeps the busy loop below from being optimized away.
var spin int

func TestGroupTicks(t *testing.T) {
	line := []byte("4242 (a) b (c) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 5 0 0\n")
	if got := groupTicks(line, 4242); got != 40 {
		t.Errorf("group 4242: %d ticks, want 7+3+20+10 = 40", got)
	}
	if got := groupTicks(line, 4243); got != 0 {
		t.Errorf("another group: %d ticks, want 0", got)
	}
	if got := groupTicks([]byte("4242 (cut"), 4242); got != 0 {
		t.Errorf("a cut line: %d ticks, want 0", got)
	}
	// The live probe finds this test's own group, which has used some CPU by now.
	pg, err := syscall.Getpgid(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	for ru.Utime.Sec == 0 && ru.Utime.Usec < 50_000 { // 50 ms of work: 5 clock ticks
		for i := range 1 << 20 {
			spin += i
		}
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
	}
	if got := (idleProbe{pgid: pg}).cpu(); got < 3 {
		t.Errorf("this test's process group %d, after 50 ms of CPU: %d ticks, want at least 3", pg, got)
	}
}
