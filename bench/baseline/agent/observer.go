package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// observer is the agent's own view of the server, apart from the bus it measures: a plain
// RESP2 connection that reads the queue's sets. It is written on the standard library alone
// (a dozen lines of RESP) so that the agent builds against any tree, whatever its client.
type observer struct {
	nc net.Conn
	br *bufio.Reader
}

func dialObserver(ctx context.Context, addr string) (*observer, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	return &observer{nc: nc, br: bufio.NewReader(nc)}, nil
}

func (o *observer) close() { _ = o.nc.Close() }

// ints sends cmds in one write and reads one integer reply each.
func (o *observer) ints(ctx context.Context, cmds ...[]string) ([]int64, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = o.nc.SetDeadline(d)
	}
	var w []byte
	for _, c := range cmds {
		w = append(w, '*')
		w = strconv.AppendInt(w, int64(len(c)), 10)
		w = append(w, "\r\n"...)
		for _, a := range c {
			w = append(w, '$')
			w = strconv.AppendInt(w, int64(len(a)), 10)
			w = append(w, "\r\n"...)
			w = append(append(w, a...), "\r\n"...)
		}
	}
	if _, err := o.nc.Write(w); err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	out := make([]int64, len(cmds))
	for i := range out {
		line, err := o.br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("observer: %w", err)
		}
		if len(line) < 3 || line[0] != ':' {
			return nil, fmt.Errorf("observer: %q: not an integer reply", line)
		}
		if out[i], err = strconv.ParseInt(line[1:len(line)-2], 10, 64); err != nil {
			return nil, fmt.Errorf("observer: %w", err)
		}
	}
	return out, nil
}

// key is one of queue's keys in the canon's grammar.
func key(queue, typ string) string { return "emq:{" + queue + "}:" + typ }

func (o *observer) pending(ctx context.Context, queue string) (int64, error) {
	n, err := o.ints(ctx, []string{"ZCARD", key(queue, "pending")})
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// untilEmpty polls every millisecond, once ready holds, until queue has no pending and no
// active job, and returns that instant (unix nanos).
func (o *observer) untilEmpty(ctx context.Context, queue string, ready func() bool) (int64, error) {
	zc := func(typ string) []string { return []string{"ZCARD", key(queue, typ)} }
	for {
		select {
		case <-ctx.Done():
			return 0, errors.Join(errors.New("observer: the queue did not empty"), ctx.Err())
		case <-time.After(time.Millisecond):
		}
		if !ready() {
			continue
		}
		n, err := o.ints(ctx, zc("pending"), zc("active"))
		if err != nil {
			return 0, err
		}
		if n[0] == 0 && n[1] == 0 {
			return time.Now().UnixNano(), nil
		}
	}
}
