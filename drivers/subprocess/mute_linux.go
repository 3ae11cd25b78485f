package subprocess

import (
	"bytes"
	"os"
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

// cpu is the process group's CPU time so far, in clock ticks. It reads /proc once and each
// process's stat file with three system calls (a glob of /proc/[0-9]*/stat would also list
// every process's folder, which made this probe most of the harness's CPU time).
func (p idleProbe) cpu() int64 {
	dir, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	var total int64
	buf := make([]byte, 1024)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		fd, err := unix.Open("/proc/"+name+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		n, err := unix.Read(fd, buf)
		unix.Close(fd)
		if err != nil || n <= 0 {
			continue
		}
		total += groupTicks(buf[:n], p.pgid)
	}
	return total
}

// groupTicks is the CPU time a /proc/<pid>/stat line counts for process group pgid: the
// process's own and its reaped children's, or 0 for a process of another group.
func groupTicks(b []byte, pgid int) int64 {
	// Fields after the command's closing parenthesis: state ppid pgrp … (stat(5)).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return 0
	}
	if pg, _ := strconv.Atoi(string(f[2])); pg != pgid {
		return 0
	}
	var total int64
	for _, j := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.ParseInt(string(f[j]), 10, 64)
		total += v
	}
	return total
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every Linux the kit meets).
const clockTick = 10 * time.Millisecond
