package connector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/echomq/kit/reference/resp"
)

// Monitor is a dedicated connection in MONITOR mode: it yields every command the server
// executes, one line each, in the server's order. It returns from NewMonitor only after the
// server acknowledged MONITOR, so commands sent afterwards by others are seen.
type Monitor struct {
	nc    net.Conn
	lines chan string
	done  chan struct{}
	once  sync.Once

	mu  sync.Mutex
	err error
}

// NewMonitor dials addr and enters MONITOR mode.
func NewMonitor(ctx context.Context, addr string) (*Monitor, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connector: monitor: dial %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	br := bufio.NewReaderSize(nc, 64<<10)
	// A MONITOR line is a simple string that quotes a whole command, payloads included: it may
	// be as long as the longest bulk the server accepts.
	lim := resp.DefaultLimits()
	lim.MaxLine = int(lim.MaxBulk)*4 + 1024
	rd := resp.NewReader(br, lim)
	fail := func(err error) (*Monitor, error) {
		_ = nc.Close()
		return nil, fmt.Errorf("connector: monitor: %w", err)
	}
	// No HELLO: a fresh connection speaks RESP2 already, and a monitor must also attach to a
	// server that rejects HELLO (the kit watches what a port sends to one).
	wire, _ := resp.AppendCommand(nil, "MONITOR")
	if _, err := nc.Write(wire); err != nil {
		return fail(err)
	}
	ok, err := rd.Read()
	if err != nil {
		return fail(err)
	}
	if err := ok.Err(); err != nil {
		return fail(err)
	}
	if !stop() {
		return fail(ctx.Err())
	}
	_ = nc.SetDeadline(noDeadline)
	m := &Monitor{nc: nc, lines: make(chan string, 8192), done: make(chan struct{})}
	go m.loop(rd)
	return m, nil
}

func (m *Monitor) loop(rd *resp.Reader) {
	defer close(m.lines)
	for {
		v, err := rd.Read()
		if err == nil && v.Type != resp.SimpleString {
			err = &resp.ProtocolError{Reason: "monitor line is a " + v.Type.String()}
		}
		if err != nil {
			m.mu.Lock()
			m.err = err
			m.mu.Unlock()
			return
		}
		select {
		case m.lines <- string(v.Str):
		case <-m.done:
			return
		}
	}
}

// Next returns the next monitored line, e.g.
// `1700000000.123456 [0 127.0.0.1:50000] "EVALSHA" "…" "1" "k"`.
// After Close, or when the connection ends, it returns an error (io.EOF after Close).
func (m *Monitor) Next(ctx context.Context) (string, error) {
	select {
	case l, ok := <-m.lines:
		if ok {
			return l, nil
		}
		m.mu.Lock()
		err := m.err
		m.mu.Unlock()
		select {
		case <-m.done:
			return "", io.EOF
		default:
		}
		return "", fmt.Errorf("connector: monitor: %w", err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// LocalAddr is the monitor connection's own address, as MONITOR lines name its client.
func (m *Monitor) LocalAddr() string { return m.nc.LocalAddr().String() }

// Close ends the monitor.
func (m *Monitor) Close() error {
	m.once.Do(func() {
		close(m.done)
		_ = m.nc.Close()
	})
	return nil
}

// MonitorLine is a parsed MONITOR line.
type MonitorLine struct {
	Time   string // seconds.micros as the server printed it
	DB     int
	Client string // "ip:port", "lua" for commands a script ran, "unix:…"
	Args   []string
}

// ParseMonitorLine splits a MONITOR line into its parts, unquoting the arguments.
func ParseMonitorLine(line string) (MonitorLine, error) {
	var ml MonitorLine
	ts, rest, ok := strings.Cut(line, " [")
	if !ok {
		return ml, errors.New("connector: monitor line without [db client]")
	}
	ml.Time = ts
	hdr, rest, ok := strings.Cut(rest, "] ")
	if !ok {
		// A command with no arguments cannot happen; still tolerate "]" at end.
		hdr, ok = strings.CutSuffix(rest, "]")
		if !ok {
			return ml, errors.New("connector: monitor line header not closed")
		}
		rest = ""
	}
	db, client, _ := strings.Cut(hdr, " ")
	n, err := strconv.Atoi(db)
	if err != nil {
		return ml, fmt.Errorf("connector: monitor line db %q: %w", db, err)
	}
	ml.DB, ml.Client = n, client
	ml.Args, err = monitorArgs(rest)
	return ml, err
}

// monitorArgs splits the quoted arguments of a MONITOR line. Valkey 8.1 escapes backslashes and
// control bytes the way sdscatrepr does but leaves double quotes inside an argument bare (seen
// on 8.1.1), so a quote closes an argument only where the line ends or the next argument opens.
// SCRIPT LOAD's source, which can hold `" "` itself, is everything up to the final quote.
func monitorArgs(rest string) ([]string, error) {
	const load = `"SCRIPT" "LOAD" "`
	if len(rest) > len(load) && strings.EqualFold(rest[:len(load)], load) && strings.HasSuffix(rest, `"`) {
		return []string{rest[1:7], rest[10:14], unrepr(rest[len(load) : len(rest)-1])}, nil
	}
	closes := func(i int) bool { return i+1 == len(rest) || strings.HasPrefix(rest[i+1:], ` "`) }
	var args []string
	for i := 0; i < len(rest); {
		if rest[i] == ' ' {
			i++
			continue
		}
		if rest[i] != '"' {
			return args, fmt.Errorf("connector: monitor argument not quoted at %q", rest[i:])
		}
		start := i + 1
		for i = start; i < len(rest) && !(rest[i] == '"' && closes(i)); i++ {
			if rest[i] == '\\' {
				i++
			}
		}
		if i >= len(rest) {
			return args, errors.New("connector: monitor argument not terminated")
		}
		args = append(args, unrepr(rest[start:i]))
		i++
	}
	return args, nil
}

// unrepr undoes sdscatrepr's escapes: \\ \" \n \r \t \a \b \xHH.
func unrepr(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'x':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteByte('x')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
