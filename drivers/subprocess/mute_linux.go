package subprocess

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// idleProbe tells a mute port from a slow start on Linux: it reports whether the port has read
// everything written to its standard input, and the CPU time its whole process group has used
// (its live members, with the children they reaped).
type idleProbe struct {
	stdin *os.File
	pgid  int
}

func newIdleProbe(stdin *os.File, pid int) (idleProbe, bool) { return idleProbe{stdin, pid}, pid > 0 }

// drained: no byte of what the kit wrote waits in the pipe (the port read its request);
// TIOCINQ is FIONREAD, which Linux answers on either end of a pipe.
func (p idleProbe) drained() bool {
	rc, err := p.stdin.SyscallConn()
	if err != nil {
		return false
	}
	n, ierr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return false
	}
	return n == 0
}

// cpu is the process group's CPU time so far, in clock ticks.
func (p idleProbe) cpu() int64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total int64
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid pgrp … (stat(5)).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 15 {
			continue
		}
		if pg, _ := strconv.Atoi(string(f[2])); pg != p.pgid {
			continue
		}
		for _, j := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			v, _ := strconv.ParseInt(string(f[j]), 10, 64)
			total += v
		}
	}
	return total
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every Linux the kit meets).
const clockTick = 10 * time.Millisecond
