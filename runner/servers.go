package runner

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/echomq/kit/reference/resp"
)

// server is what HELLO 2 tells about a server.
type server struct {
	Addr, Name, Version, Mode string
}

// hello asks the server at addr who it is, with HELLO 2.
func hello(ctx context.Context, addr string) (server, error) {
	s := server{Addr: addr}
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return s, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	buf, err := resp.AppendCommand(nil, "HELLO", "2")
	if err != nil {
		return s, err
	}
	if _, err := nc.Write(buf); err != nil {
		return s, err
	}
	v, err := resp.NewReader(bufio.NewReader(nc), resp.DefaultLimits()).Read()
	if err != nil {
		return s, err
	}
	if err := v.Err(); err != nil {
		return s, fmt.Errorf("HELLO 2: %w", err)
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		switch v.Elems[i].Text() {
		case "server":
			s.Name = v.Elems[i+1].Text()
		case "version":
			s.Version = v.Elems[i+1].Text()
		case "mode":
			s.Mode = v.Elems[i+1].Text()
		}
	}
	return s, nil
}

// checkValkey is the server at addr, checked to be a Valkey.
func checkValkey(ctx context.Context, addr string) (server, error) {
	s, err := hello(ctx, addr)
	if err != nil {
		return server{}, fmt.Errorf("%s: %w", addr, err)
	}
	if s.Name != "valkey" {
		return server{}, fmt.Errorf("%s answers as %q %s, not valkey: the kit certifies against Valkey 8.1", addr, s.Name, s.Version)
	}
	return s, nil
}

// checkCluster checks every node to be a Valkey in cluster mode; the seed is the first node.
func checkCluster(ctx context.Context, nodes []string) (server, error) {
	if len(nodes) == 0 {
		return server{}, fmt.Errorf("no cluster node given")
	}
	var seed server
	for i, addr := range nodes {
		s, err := hello(ctx, addr)
		if err != nil {
			return server{}, fmt.Errorf("%s: %w", addr, err)
		}
		if s.Name != "valkey" || s.Mode != "cluster" {
			return server{}, fmt.Errorf("%s answers as %q %s in %s mode, not a valkey cluster node", addr, s.Name, s.Version, s.Mode)
		}
		if i == 0 {
			seed = s
		}
	}
	return seed, nil
}
