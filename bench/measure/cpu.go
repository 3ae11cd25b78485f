package measure

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times (100 on every mainstream build).
const clockTick = 10 * time.Millisecond

// Clock reads CPU time used by the parties of a run: this process (the load generator and
// every system's client side), the Valkey server, the PostgreSQL server with its backends, and
// the whole machine (teammates' work included). An engine not started here (PID 0) is unknown.
type Clock struct {
	ValkeyPID, PGPID int
	ClientPID        int   // a system's client in another process (a Node.js driver and its producer process), counted as the bench's
	ValkeyPIDs       []int // more Valkey servers counted as one party (a cluster's primaries)
}

// WithClient also counts pid's CPU on the client side.
func (c Clock) WithClient(pid int) Clock {
	c.ClientPID = pid
	return c
}

// Times is one reading of every party's CPU time.
type Times struct {
	At               time.Time
	bench            time.Duration
	valkey, postgres time.Duration // -1: unknown
	machine          time.Duration // busy time of all cores; -1: unknown
}

// Read takes one reading.
func (c Clock) Read() Times {
	t := Times{At: time.Now(), valkey: -1, postgres: -1, machine: -1}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.bench = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if c.ClientPID > 0 {
		if d := treeCPU(c.ClientPID); d >= 0 {
			t.bench += d
		}
	}
	if c.ValkeyPID > 0 || len(c.ValkeyPIDs) > 0 {
		t.valkey = 0
		for _, pid := range append([]int{c.ValkeyPID}, c.ValkeyPIDs...) {
			if pid <= 0 {
				continue
			}
			f, ok := procStat(pid)
			if !ok {
				t.valkey = -1 // one server unknown: the sum is unknown
				break
			}
			t.valkey += f.self
		}
	}
	if c.PGPID > 0 {
		t.postgres = postgresCPU(c.PGPID)
	}
	t.machine = machineBusy()
	return t
}

// CPU is how many cores each party kept busy on average over a measurement (CPU seconds ÷
// wall seconds). Nil fields are unknown (an engine given from outside, no /proc).
type CPU struct {
	Bench    float64  `json:"bench"`
	Valkey   *float64 `json:"valkey,omitempty"`
	Postgres *float64 `json:"postgres,omitempty"`
	Machine  *float64 `json:"machine,omitempty"`
	// Outside is the share of the machine's cores busy with work that is not this run's (other
	// users of a shared machine): (machine − bench − engines) ÷ cores. A figure taken with a
	// large outside share was taken under load.
	Outside *float64 `json:"outside,omitempty"`
}

// Acc sums CPU and wall time over several measurements of one system.
type Acc struct {
	wall                             time.Duration
	bench, valkey, postgres, machine time.Duration
	noValkey, noPostgres, noMachine  bool
	measured                         bool
}

// Add accounts the interval from one reading to a later one.
func (a *Acc) Add(from, to Times) {
	a.measured = true
	a.wall += to.At.Sub(from.At)
	a.bench += to.bench - from.bench
	sum := func(dst *time.Duration, unknown *bool, x, y time.Duration) {
		if x < 0 || y < 0 {
			*unknown = true
			return
		}
		*dst += y - x
	}
	sum(&a.valkey, &a.noValkey, from.valkey, to.valkey)
	sum(&a.postgres, &a.noPostgres, from.postgres, to.postgres)
	sum(&a.machine, &a.noMachine, from.machine, to.machine)
}

// CPU is the accumulated cores busy per party; nil when nothing was measured.
func (a *Acc) CPU() *CPU {
	if !a.measured || a.wall <= 0 {
		return nil
	}
	w := a.wall.Seconds()
	ratio := func(d time.Duration, unknown bool) *float64 {
		if unknown {
			return nil
		}
		v := d.Seconds() / w
		return &v
	}
	c := &CPU{Bench: a.bench.Seconds() / w, Valkey: ratio(a.valkey, a.noValkey),
		Postgres: ratio(a.postgres, a.noPostgres), Machine: ratio(a.machine, a.noMachine)}
	if c.Machine != nil {
		out := *c.Machine - c.Bench
		for _, e := range []*float64{c.Valkey, c.Postgres} {
			if e != nil {
				out -= *e
			}
		}
		out = max(out, 0) / float64(runtime.NumCPU())
		c.Outside = &out
	}
	return c
}

type statFields struct {
	ppid     int
	self     time.Duration // utime + stime
	children time.Duration // cutime + cstime: reaped children
}

// procStat parses /proc/<pid>/stat. The command name may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func procStat(pid int) (statFields, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return statFields{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return statFields{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return statFields{}, false
	}
	n := func(k int) int64 {
		v, _ := strconv.ParseInt(string(f[k]), 10, 64)
		return v
	}
	return statFields{ppid: int(n(1)), self: time.Duration(n(11)+n(12)) * clockTick,
		children: time.Duration(n(13)+n(14)) * clockTick}, true
}

// postgresCPU is the postmaster's CPU, its reaped children's, and its live children's.
func postgresCPU(pid int) time.Duration { return treeCPU(pid) }

// treeCPU is a process's CPU, its reaped children's, and its live children's (-1: unknown). A
// child reaped while /proc is scanned would be counted in neither (a PostgreSQL backend ending
// read as a negative share), so the scan is taken again until the reaped children's total is
// the same on both sides of it.
func treeCPU(pid int) time.Duration {
	for range 5 {
		before, ok := procStat(pid)
		if !ok {
			return -1
		}
		live, ok := childrenCPU(pid)
		if !ok {
			return -1
		}
		after, ok := procStat(pid)
		if !ok {
			return -1
		}
		if after.children == before.children {
			return after.self + after.children + live
		}
	}
	return -1
}

// childrenCPU sums the CPU of pid's live (and not yet reaped) children.
func childrenCPU(pid int) (time.Duration, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if f, ok := procStat(child); ok && f.ppid == pid {
			total += f.self
		}
	}
	return total, true
}

// machineBusy is the busy time of all cores from /proc/stat (everything but idle and iowait).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 6 || string(f[0]) != "cpu" {
		return -1
	}
	var busy int64
	for k, v := range f[1:] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return -1
		}
		if k == 3 || k == 4 || k >= 8 { // idle, iowait; guest times are already in user
			continue
		}
		busy += n
	}
	return time.Duration(busy) * clockTick
}

// cgroupCPULimit is the CPU quota of this process's cgroup in cores (cgroup v2 cpu.max, else v1
// cfs quota ÷ period); 0 when there is none or it cannot be read.
func CgroupCPULimit() float64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		f := bytes.Fields(b)
		if len(f) == 2 && string(f[0]) != "max" {
			q, err1 := strconv.ParseFloat(string(f[0]), 64)
			p, err2 := strconv.ParseFloat(string(f[1]), 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p
			}
		}
		return 0
	}
	for _, dir := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		qb, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
		pb, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
		if err1 != nil || err2 != nil {
			continue
		}
		q, err1 := strconv.ParseFloat(string(bytes.TrimSpace(qb)), 64)
		p, err2 := strconv.ParseFloat(string(bytes.TrimSpace(pb)), 64)
		if err1 == nil && err2 == nil && q > 0 && p > 0 {
			return q / p
		}
		return 0
	}
	return 0
}

// over reads the parties' CPU over window (nil without /proc or when ctx ends).
func (c Clock) over(ctx context.Context, window time.Duration) *CPU {
	from := c.Read()
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(window):
	}
	var a Acc
	a.Add(from, c.Read())
	return a.CPU()
}

// Outside measures the share of the machine's cores busy with other work over window: the
// engines and this process are subtracted as in a measurement. ok is false without /proc.
func (c Clock) Outside(ctx context.Context, window time.Duration) (share float64, ok bool) {
	if cpu := c.over(ctx, window); cpu != nil && cpu.Outside != nil {
		return *cpu.Outside, true
	}
	return 0, false
}

// Engines is the share of the machine's cores the run's Valkey and PostgreSQL kept busy over
// window; ok is false when neither is known.
func (c Clock) Engines(ctx context.Context, window time.Duration) (share float64, ok bool) {
	cpu := c.over(ctx, window)
	if cpu == nil || (cpu.Valkey == nil && cpu.Postgres == nil) {
		return 0, false
	}
	for _, v := range []*float64{cpu.Valkey, cpu.Postgres} {
		if v != nil {
			share += *v
		}
	}
	return share / float64(runtime.NumCPU()), true
}

// WaitQuiet waits, up to most, until the outside share over one window is at most limit, and
// returns the last share it saw: a re-measurement taken at a quieter moment is worth the wait.
func (c Clock) WaitQuiet(ctx context.Context, limit float64, window, most time.Duration) (float64, bool) {
	deadline := time.Now().Add(most)
	for {
		share, ok := c.Outside(ctx, window)
		if !ok || share <= limit || !time.Now().Before(deadline) || ctx.Err() != nil {
			return share, ok
		}
	}
}

// Settler holds each measurement until the work the previous one left behind is done: a
// system measured right after another starts while that one's engine still works, and then
// measures that work as its own latency. It waits, window by window and at most Most, until
// Sample (Clock.Engines in the bench) reads no busier than the quietest window it has seen plus
// Margin — relative, so that a steady load is not waited on for nothing.
type Settler struct {
	Window, Most time.Duration
	Margin       float64
	// Sample reads the busy share over one window; a test gives it a script.
	Sample func(ctx context.Context, window time.Duration) (float64, bool)
	floor  float64
	seen   bool
}

// Settle waits for Sample to settle and says how busy it read when it stopped waiting,
// and for how long it waited. It takes at most Most/Window windows (the first call at least
// four, to find the floor).
func (s *Settler) Settle(ctx context.Context) (share float64, waited time.Duration, ok bool) {
	t0 := time.Now()
	first, most := !s.seen, max(4, int(s.Most/max(s.Window, time.Millisecond)))
	for n := 1; ; n++ {
		share, ok = s.Sample(ctx, s.Window)
		if !ok {
			return 0, time.Since(t0), false
		}
		if !s.seen || share < s.floor {
			s.floor, s.seen = share, true
		}
		if first && n < 4 {
			continue // the first call looks a while for the floor before it judges against it
		}
		if share <= s.floor+s.Margin || n >= most || ctx.Err() != nil {
			return share, time.Since(t0), true
		}
	}
}
