package wire

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/echomq/kit/reference/resp"
)

// VersionProxy stands in front of a real Valkey and presents another server identity: in the
// replies to HELLO (its server and version fields) and to INFO (server_name, valkey_version,
// and for a presented Redis redis_version), everything else passed through byte for byte in
// meaning. The kit has one real Valkey 8.1 to certify against; the proxy lets it ask how a port
// compares a version it has never met (8.1.10, 8.10.0, 10.0.0, 8.0.99) without a server of each.
// Requests and replies are paired in order, so a connection must not MONITOR or SUBSCRIBE
// through it (a port's connections never do).
type VersionProxy struct {
	ln              net.Listener
	upstream        string
	server, version string
	dangling        bool // HELLO's reply ends in a field name with no value

	mu      sync.Mutex
	clients []string // the proxy's own addresses towards the upstream, as the server's MONITOR names them
	conns   []net.Conn
	wg      sync.WaitGroup
}

// StartVersionProxy listens on a free loopback port and relays to upstream, presenting server
// (e.g. "valkey") at version (e.g. "8.10.0").
func StartVersionProxy(upstream, server, version string) (*VersionProxy, error) {
	return startVersionProxy(upstream, server, version, false)
}

// StartDanglingHelloProxy is StartVersionProxy whose HELLO reply also ends in one field name
// with no value after it: a flat array of odd length, which no field/value map is.
func StartDanglingHelloProxy(upstream, server, version string) (*VersionProxy, error) {
	return startVersionProxy(upstream, server, version, true)
}

func startVersionProxy(upstream, server, version string, dangling bool) (*VersionProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("version proxy: %w", err)
	}
	p := &VersionProxy{ln: ln, upstream: upstream, server: server, version: version, dangling: dangling}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where a port connects to meet the presented server.
func (p *VersionProxy) Addr() string { return p.ln.Addr().String() }

// Clients are the proxy's connections' addresses as the upstream server sees them.
func (p *VersionProxy) Clients() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.clients...)
}

// Close stops accepting, drops every relayed connection and waits for the relays to end.
func (p *VersionProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *VersionProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		var d net.Dialer
		up, err := d.DialContext(context.Background(), "tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.clients = append(p.clients, up.LocalAddr().String())
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		names := make(chan string, 1024) // each request's command name, in order
		p.wg.Add(2)
		go p.requests(c, up, names)
		go p.replies(up, c, names)
	}
}

// requests relays the client's commands upstream, noting each one's name for its reply.
func (p *VersionProxy) requests(c, up net.Conn, names chan<- string) {
	defer p.wg.Done()
	defer close(names)
	defer up.Close()
	br := bufio.NewReader(c)
	r := resp.NewReader(br, resp.Limits{})
	w := bufio.NewWriter(up)
	for {
		v, err := r.Read()
		if err != nil {
			return
		}
		name := ""
		if len(v.Elems) > 0 {
			name = strings.ToUpper(string(v.Elems[0].Str))
		}
		names <- name
		w.Write(appendValue(nil, v))
		if br.Buffered() == 0 && w.Flush() != nil { // a pipeline goes up as one write
			return
		}
	}
}

// replies relays the server's replies to the client, HELLO's and INFO's rewritten.
func (p *VersionProxy) replies(up, c net.Conn, names <-chan string) {
	defer p.wg.Done()
	defer c.Close()
	r := resp.NewReader(bufio.NewReader(up), resp.Limits{})
	for name := range names {
		v, err := r.Read()
		if err != nil {
			return
		}
		switch name {
		case "HELLO":
			v = p.hello(v)
		case "INFO":
			v = p.info(v)
		}
		if _, err := c.Write(appendValue(nil, v)); err != nil {
			return
		}
	}
}

// hello rewrites the server and version of a HELLO reply (RESP2: a flat field/value array).
func (p *VersionProxy) hello(v resp.Value) resp.Value {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		switch string(v.Elems[i].Str) {
		case "server":
			v.Elems[i+1].Str = []byte(p.server)
		case "version":
			v.Elems[i+1].Str = []byte(p.version)
		}
	}
	if p.dangling && v.Type == resp.Array && !v.Null {
		v.Elems = append(v.Elems, resp.Value{Type: resp.BulkString, Str: []byte("dangling")})
	}
	return v
}

// info rewrites the server's identity lines of an INFO reply.
func (p *VersionProxy) info(v resp.Value) resp.Value {
	if v.Type != resp.BulkString || v.Null {
		return v
	}
	lines := strings.Split(string(v.Str), "\r\n")
	out := lines[:0]
	for _, l := range lines {
		key, _, _ := strings.Cut(l, ":")
		switch {
		case key == "server_name":
			l = "server_name:" + p.server
		case key == "valkey_version" && p.server != "valkey":
			continue // a Redis says no such line
		case key == "valkey_version" || key == "redis_version" && p.server == "redis":
			l = key + ":" + p.version
		}
		out = append(out, l)
	}
	v.Str = []byte(strings.Join(out, "\r\n"))
	return v
}

// appendValue encodes v as RESP2.
func appendValue(b []byte, v resp.Value) []byte {
	switch {
	case v.Null && v.Type == resp.Array:
		return append(b, "*-1\r\n"...)
	case v.Null:
		return append(b, "$-1\r\n"...)
	}
	switch v.Type {
	case resp.SimpleString:
		return append(append(append(b, '+'), v.Str...), "\r\n"...)
	case resp.ErrorReply:
		return append(append(append(b, '-'), v.Str...), "\r\n"...)
	case resp.Integer:
		return append(strconv.AppendInt(append(b, ':'), v.Int, 10), "\r\n"...)
	case resp.Array:
		b = resp.AppendArrayLen(b, len(v.Elems))
		for _, e := range v.Elems {
			b = appendValue(b, e)
		}
		return b
	}
	return resp.AppendBulk(b, v.Str)
}
