package engines

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// roundTrip runs cmds on addr over a short-lived connection, pipelined, and returns every reply
// (an error reply is a reply, not an error). It speaks RESP through reference/resp's codec
// only, never the connector: the engines lean on no session code the contracts judge.
func roundTrip(ctx context.Context, addr string, timeout time.Duration, cmds ...[]any) ([]resp.Value, error) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	var req []byte
	for _, args := range cmds {
		if req, err = resp.AppendCommand(req, args...); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	r := resp.NewReader(bufio.NewReader(conn), resp.DefaultLimits())
	out := make([]resp.Value, len(cmds))
	for i := range out {
		if out[i], err = r.Read(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// clusterDo runs one command on addr; an error reply is returned as a *resp.ServerError.
func clusterDo(ctx context.Context, addr string, args ...string) (resp.Value, error) {
	cmd := make([]any, len(args))
	for i, a := range args {
		cmd[i] = a
	}
	vs, err := roundTrip(ctx, addr, 5*time.Second, cmd)
	if err != nil {
		return resp.Value{}, err
	}
	if err := vs[0].Err(); err != nil {
		return vs[0], err
	}
	return vs[0], nil
}

// valkeyInfo does (AUTH,) PING and INFO server: the server's INFO fields. An error reply (e.g.
// NOAUTH) is a *resp.ServerError.
func valkeyInfo(ctx context.Context, addr, password string) (map[string]string, error) {
	var cmds [][]any
	if password != "" {
		cmds = append(cmds, []any{"AUTH", password})
	}
	cmds = append(cmds, []any{"PING"}, []any{"INFO", "server"})
	vs, err := roundTrip(ctx, addr, 2*time.Second, cmds...)
	if err != nil {
		return nil, err
	}
	for i, what := range []string{"AUTH", "PING", "INFO server"}[3-len(vs):] {
		if err := vs[i].Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if pong := vs[len(vs)-2].Text(); pong != "PONG" {
		return nil, fmt.Errorf("PING answered %q", pong)
	}
	return infoFields(vs[len(vs)-1].Text()), nil
}
