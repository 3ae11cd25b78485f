package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// Conn is the harness's own RESP2 connection to the server: FLUSHALL, reads of the keyspace,
// TIME, CLIENT LIST, the kit's own enqueues. Its local address is known, so its lines are told
// apart from the port's in the MONITOR stream.
type Conn struct {
	nc    net.Conn
	r     *resp.Reader
	local string
	wait  time.Duration // how long a call may take; zero: defaultWait
}

// defaultWait bounds a harness call, so a server that stops answering fails the clause instead
// of holding it.
const defaultWait = 10 * time.Second

// SetWait lets calls on c take up to d: for a command whose reply the server holds by design
// (DEBUG RELOAD answers when a slowed load ends, later still on a loaded machine).
func (c *Conn) SetWait(d time.Duration) { c.wait = d }

// Dial connects to addr.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, r: resp.NewReader(bufio.NewReader(nc), resp.DefaultLimits()), local: nc.LocalAddr().String()}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Local is the connection's own address, as the server's MONITOR and CLIENT LIST show it.
func (c *Conn) Local() string { return c.local }

// Pipeline sends every command, then reads every reply. A server error reply is returned in
// its Value, not as an error; the error is for the connection.
func (c *Conn) Pipeline(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	var buf []byte
	for _, args := range cmds {
		var err error
		if buf, err = resp.AppendCommand(buf, args...); err != nil {
			return nil, err
		}
	}
	wait := c.wait
	if wait == 0 {
		wait = defaultWait
	}
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(buf); err != nil {
		return nil, err
	}
	out := make([]resp.Value, len(cmds))
	for i := range out {
		v, err := c.r.Read()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Do runs one command and turns an error reply into an error.
func (c *Conn) Do(ctx context.Context, args ...any) (resp.Value, error) {
	vs, err := c.Pipeline(ctx, args)
	if err != nil {
		return resp.Value{}, err
	}
	if e := vs[0].Err(); e != nil {
		return vs[0], e
	}
	return vs[0], nil
}

// ServerMS is the server's clock in ms (A2: sec*1000 + floor(usec/1000)).
func (c *Conn) ServerMS(ctx context.Context) (int64, error) {
	v, err := c.Do(ctx, "TIME")
	if err != nil {
		return 0, err
	}
	if len(v.Elems) != 2 {
		return 0, errors.New("TIME: unexpected reply")
	}
	sec, err1 := v.Elems[0].Int64()
	usec, err2 := v.Elems[1].Int64()
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("TIME: %v %v", err1, err2)
	}
	return sec*1000 + usec/1000, nil
}
