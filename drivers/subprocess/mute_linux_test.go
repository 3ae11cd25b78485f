package subprocess

import (
	"os"
	"syscall"
	"testing"
)

// spin keeps the busy loop below from being optimized away.
var spin int

// TestGroupStat reads a stat line whose command holds ") " and spaces: only the fields after
// the last ')' count, and only for the line's own process group; and an io file's system calls.
func TestGroupStat(t *testing.T) {
	line := []byte("4242 (a) b (c) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 5 0 0\n")
	if got, st, ok := groupStat(line, 4242); got != 40 || st != 'S' || !ok {
		t.Errorf("group 4242: %d ticks, state %c, %v; want 7+3+20+10 = 40, S, true", got, st, ok)
	}
	if got, _, ok := groupStat(line, 4243); got != 0 || ok {
		t.Errorf("another group: %d ticks, %v; want 0, false", got, ok)
	}
	if got, _, ok := groupStat([]byte("4242 (cut"), 4242); got != 0 || ok {
		t.Errorf("a cut line: %d ticks, %v; want 0, false", got, ok)
	}
	io := []byte("rchar: 100\nwchar: 50\nsyscr: 7\nsyscw: 5\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
	if got := ioCalls(io); got != 12 {
		t.Errorf("io calls %d, want syscr 7 + syscw 5 = 12", got)
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
	if a := (idleProbe{pgid: pg}).activity(); a.ticks < 3 || !a.running || a.calls == 0 {
		t.Errorf("this test's process group %d, after 50 ms of CPU: %+v, want at least 3 ticks, running (this test is), some system calls", pg, a)
	}
}
