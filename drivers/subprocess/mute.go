package subprocess

import "time"

// mutePoll is how often a session's first request looks at the port's process group.
const mutePoll = 250 * time.Millisecond

// muteWatch tells a mute port from a slow start while the first request waits its start
// deadline: a port that has read the request and whose processes neither run, nor use CPU, nor
// read or write anything for MuteAfter will never answer (an interpreter coming up has not read
// its input yet, or is busy; a port waiting on a slow server reads and writes its socket; a port
// starved on a busy machine is runnable).
type muteWatch struct {
	probe idleProbe
	after time.Duration
	last  groupActivity
	since time.Time // idle since; zero until the port has read its request
}

func (d *driver) watchMute() *muteWatch {
	p, ok := newIdleProbe(d.stdin, d.cmd.Process.Pid)
	if !ok || d.f.opt.MuteAfter <= 0 {
		return nil
	}
	return &muteWatch{probe: p, after: d.f.opt.MuteAfter}
}

// silent samples the port at now: true once it has been drained and idle for the whole window.
// The process group (a walk of /proc) is read only once the port has read its request: most
// hellos are answered before the first sample, and a port still reading cannot be mute.
func (m *muteWatch) silent(now time.Time) bool {
	if !m.probe.drained() {
		m.since = time.Time{}
		return false
	}
	a := m.probe.activity()
	// A tick of bookkeeping is not work.
	if m.since.IsZero() || a.running || a.ticks-m.last.ticks > 1 || a.calls != m.last.calls {
		m.last, m.since = a, now
		return false
	}
	return now.Sub(m.since) >= m.after
}
