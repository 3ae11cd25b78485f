package contracts

import (
	"context"
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
// atomic), which is how lua lines are attributed.
type Line struct {
	Seq    int
	Client string
	Args   []string
	Script int
}

// Cmd is the upper-cased command name.
func (l Line) Cmd() string {
	if len(l.Args) == 0 {
		return ""
	}
	return strings.ToUpper(l.Args[0])
}

func (l Line) String() string {
	var b strings.Builder
	b.WriteString("[" + l.Client + "]")
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

// monitor captures the server's MONITOR stream on a dedicated connection.
type monitor struct {
	mon   *connector.Monitor
	local string
	mu    sync.Mutex
	lines []Line
	err   error
	cond  *sync.Cond
	last  int // index of the most recent non-lua line that opened a script (EVALSHA/EVAL)
}

// startMonitor captures every command the server runs, on the connector's MONITOR reader.
func startMonitor(ctx context.Context, addr string) (*monitor, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	mon, err := connector.NewMonitor(dctx, addr)
	if err != nil {
		return nil, err
	}
	m := &monitor{mon: mon, local: mon.LocalAddr(), last: -1}
	m.cond = sync.NewCond(&m.mu)
	go m.read()
	return m, nil
}

func (m *monitor) read() {
	for {
		s, err := m.mon.Next(context.Background())
		if err != nil {
			m.mu.Lock()
			m.err = err
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
		if l.Client == "lua" {
			l.Script = m.last
		} else if c := l.Cmd(); c == "EVALSHA" || c == "EVAL" || c == "EVALSHA_RO" || c == "EVAL_RO" || c == "FCALL" || c == "FCALL_RO" {
			m.last = l.Seq
		}
		m.lines = append(m.lines, l)
		m.cond.Broadcast()
		m.mu.Unlock()
	}
}

// sync waits until a marker the harness sent on c shows in the stream: every command the server
// ran before it has then been captured.
func (m *monitor) sync(ctx context.Context, c *conn, n int) error {
	mark := "emq-conform-sync-" + strconv.Itoa(n)
	if _, err := c.do(ctx, "ECHO", mark); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	timer := time.AfterFunc(time.Until(deadline), func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer timer.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.lines) - 1; ; {
		for ; i < len(m.lines); i++ {
			if i >= 0 && len(m.lines[i].Args) == 2 && m.lines[i].Client == c.local && m.lines[i].Args[1] == mark {
				return nil
			}
		}
		if m.err != nil {
			return fmt.Errorf("MONITOR stream ended: %w", m.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MONITOR did not show the sync marker within 5s")
		}
		if i < 0 {
			i = 0
		}
		m.cond.Wait()
	}
}

// snapshot returns the lines captured so far.
func (m *monitor) snapshot() []Line {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Line(nil), m.lines...)
}

func (m *monitor) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lines)
}

func (m *monitor) Close() error { return m.mon.Close() }

// parseMonitorLine reads `1700000000.123456 [0 127.0.0.1:5555] "cmd" "arg"…` with the
// connector's parser.
func parseMonitorLine(s string) (Line, bool) {
	ml, err := connector.ParseMonitorLine(s)
	if err != nil {
		return Line{}, false
	}
	return Line{Client: ml.Client, Args: ml.Args}, true
}
