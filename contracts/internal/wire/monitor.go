package wire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/reference/connector"
)

// Line is one MONITOR line: who sent it and the command's arguments. Client is the sender's
// address ("127.0.0.1:51234") or "lua" for a command a script ran; Script is set on lua lines:
// the index (in the capture) of the EVALSHA whose script ran it. Valkey 8.1.1 prints a script's
// outer EVALSHA first and its lua lines right after it, with nothing in between (scripts are
// atomic), which is how lua lines are attributed. On a cluster, Node is the primary whose
// MONITOR showed the line (its host:port) and At the server's time of it in microseconds: the
// streams of the primaries are merged in arrival order, each node's (so each connection's)
// order kept, and a lua line attributed within its own node's stream.
type Line struct {
	Seq    int
	Client string
	Args   []string
	Script int
	Node   string
	At     int64
}

// Cmd is the upper-cased command name.
func (l Line) Cmd() string {
	if len(l.Args) == 0 {
		return ""
	}
	return strings.ToUpper(l.Args[0])
}

// Arg is the i-th argument ("" past the end).
func (l Line) Arg(i int) string {
	if i < len(l.Args) {
		return l.Args[i]
	}
	return ""
}

func (l Line) String() string {
	var b strings.Builder
	b.WriteString("[" + l.Client)
	if l.Node != "" {
		b.WriteString(" @" + l.Node)
	}
	b.WriteString("]")
	for _, a := range l.Args {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(clipArg(a)))
	}
	return b.String()
}

func clipArg(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Monitor captures the MONITOR streams of the servers under test (one, or every primary of a
// cluster), each on a dedicated connection, into one capture.
type Monitor struct {
	srcs  []*source
	mu    sync.Mutex
	lines []Line
	err   error
	cond  *sync.Cond
}

// source is one node's MONITOR stream.
type source struct {
	mon   *connector.Monitor
	node  string // Line.Node of its lines
	local string
	last  int // index of the node's most recent non-lua line that opened a script (EVALSHA/EVAL)
}

// StartMonitor captures every command a standalone server runs, on the connector's MONITOR
// reader.
func StartMonitor(ctx context.Context, addr string) (*Monitor, error) {
	return StartMonitors(ctx, []string{addr}, []string{""})
}

// StartMonitors captures the streams of addrs, their lines labelled with labels.
func StartMonitors(ctx context.Context, addrs, labels []string) (*Monitor, error) {
	m := &Monitor{}
	m.cond = sync.NewCond(&m.mu)
	for i, addr := range addrs {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		mon, err := connector.NewMonitor(dctx, addr)
		cancel()
		if err != nil {
			m.Close()
			return nil, err
		}
		m.srcs = append(m.srcs, &source{mon: mon, node: labels[i], local: mon.LocalAddr(), last: -1})
	}
	for _, src := range m.srcs {
		go m.read(src)
	}
	return m, nil
}

// Locals are the monitor connections' own client addresses.
func (m *Monitor) Locals() []string {
	var out []string
	for _, s := range m.srcs {
		out = append(out, s.local)
	}
	return out
}

func (m *Monitor) read(src *source) {
	for {
		s, err := src.mon.Next(context.Background())
		if err != nil {
			m.mu.Lock()
			if m.err == nil {
				m.err = err
			}
			m.cond.Broadcast()
			m.mu.Unlock()
			return
		}
		l, ok := parseMonitorLine(s)
		if !ok {
			continue
		}
		m.mu.Lock()
		l.Seq = len(m.lines)
		l.Script = -1
		l.Node = src.node
		if l.Client == "lua" {
			l.Script = src.last
		} else if c := l.Cmd(); c == "EVALSHA" || c == "EVAL" || c == "EVALSHA_RO" || c == "EVAL_RO" || c == "FCALL" || c == "FCALL_RO" {
			src.last = l.Seq
		}
		m.lines = append(m.lines, l)
		m.cond.Broadcast()
		m.mu.Unlock()
	}
}

// Sync waits until a marker the harness sent on each of a's connections shows in that node's
// stream: every command the servers ran before it has then been captured.
func (m *Monitor) Sync(ctx context.Context, a *Admin, n int) error {
	mark := "emq-conform-sync-" + strconv.Itoa(n)
	m.mu.Lock()
	from := len(m.lines)
	m.mu.Unlock()
	for _, nd := range a.Nodes {
		if _, err := nd.C.Do(ctx, "ECHO", mark); err != nil {
			return err
		}
	}
	// A bound for a stream that stopped, not a pace: a busy machine escaping megabytes of a
	// payload's arguments takes seconds to show them.
	deadline := time.Now().Add(time.Minute)
	timer := time.AfterFunc(time.Until(deadline), func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer timer.Stop()
	seen := map[string]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := from; ; {
		for ; i < len(m.lines); i++ {
			l := m.lines[i]
			if len(l.Args) == 2 && l.Args[1] == mark {
				for _, nd := range a.Nodes {
					if l.Client == nd.C.Local() && l.Node == nd.Label {
						seen[nd.Label] = true
					}
				}
			}
		}
		if len(seen) == len(a.Nodes) {
			return nil
		}
		if m.err != nil {
			return fmt.Errorf("MONITOR stream ended: %w", m.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MONITOR did not show the sync marker within a minute")
		}
		m.cond.Wait()
	}
}

// Snapshot returns the lines captured so far.
func (m *Monitor) Snapshot() []Line {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Line(nil), m.lines...)
}

// Len is how many lines the capture holds.
func (m *Monitor) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lines)
}

// Own are the monitor connections as "node|client address" (their node's MONITOR label and
// their own address), so the harness tells its own lines from the port's.
func (m *Monitor) Own() []string {
	var out []string
	for _, s := range m.srcs {
		out = append(out, s.node+"|"+s.local)
	}
	return out
}

// Close ends every MONITOR stream.
func (m *Monitor) Close() error {
	var errs []error
	for _, s := range m.srcs {
		errs = append(errs, s.mon.Close())
	}
	return errors.Join(errs...)
}

// parseMonitorLine reads `1700000000.123456 [0 127.0.0.1:5555] "cmd" "arg"…` with the
// connector's parser.
func parseMonitorLine(s string) (Line, bool) {
	ml, err := connector.ParseMonitorLine(s)
	if err != nil {
		return Line{}, false
	}
	return Line{Client: ml.Client, Args: ml.Args, At: microsOf(ml.Time)}, true
}

// microsOf reads MONITOR's "seconds.micros" (0 when it does not parse).
func microsOf(ts string) int64 {
	sec, us, ok := strings.Cut(ts, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	u, err2 := strconv.ParseInt(us, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0
	}
	return s*1_000_000 + u
}
