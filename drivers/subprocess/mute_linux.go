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

// activity is what the process group has done so far: its CPU time in clock ticks (its live
// members', with the children they reaped), its read and write system calls (a port waiting on
// a server's slow replies makes them on its socket, a mute one makes none), and whether one of
// its processes is running or waiting for a core (state R: a port starved on a busy machine
// uses no CPU time, and is not mute either). It reads /proc once and each process's stat file
// with three system calls (a glob of /proc/[0-9]*/stat would also list every process's folder,
// which made this probe most of the harness's CPU time); a member's io file only.
func (p idleProbe) activity() (a groupActivity) {
	dir, err := os.Open("/proc")
	if err != nil {
		return a
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	buf := make([]byte, 1024)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		ticks, _, ok := groupStat(readProc(buf, "/proc/"+name+"/stat"), p.pgid)
		if !ok {
			continue
		}
		a.ticks += ticks
		a.running = a.running || p.anyThreadRunning(buf, "/proc/"+name+"/task")
		a.calls += ioCalls(readProc(buf, "/proc/"+name+"/io"))
	}
	return a
}

// anyThreadRunning tells whether a thread of the process whose task folder is dir (its main
// thread among them) is running or waits for a core: the process's own stat shows its main
// thread only.
func (p idleProbe) anyThreadRunning(buf []byte, dir string) bool {
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	for _, tid := range tids {
		if _, st, ok := groupStat(readProc(buf, dir+"/"+tid+"/stat"), p.pgid); ok && st == 'R' {
			return true
		}
	}
	return false
}

// groupActivity is one sample of a process group (activity).
type groupActivity struct {
	ticks, calls int64
	running      bool
}

// readProc reads a small /proc file into buf; nil when it cannot.
func readProc(buf []byte, path string) []byte {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil
	}
	return buf[:n]
}

// groupStat is the CPU time a /proc/<pid>/stat line counts (the process's own and its reaped
// children's) and the process's state, when it is of process group pgid.
func groupStat(b []byte, pgid int) (ticks int64, state byte, ok bool) {
	// Fields after the command's closing parenthesis: state ppid pgrp … (stat(5)).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 || len(f[0]) != 1 {
		return 0, 0, false
	}
	if pg, _ := strconv.Atoi(string(f[2])); pg != pgid {
		return 0, 0, false
	}
	for _, j := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.ParseInt(string(f[j]), 10, 64)
		ticks += v
	}
	return ticks, f[0][0], true
}

// ioCalls is syscr + syscw of a /proc/<pid>/io file (0 when unreadable: another user's process).
func ioCalls(b []byte) (n int64) {
	for _, l := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(l, []byte(": "))
		if ok && (string(k) == "syscr" || string(k) == "syscw") {
			x, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			n += x
		}
	}
	return n
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every Linux the kit meets).
const clockTick = 10 * time.Millisecond
