package wire

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/resp"
)

// TestVersionProxy: HELLO and INFO name the presented server, every other reply is the real
// server's, and a pipeline's replies keep their order.
func TestVersionProxy(t *testing.T) {
	vk := enginestest.Valkey(t)
	for _, c := range []struct{ server, version, infoLine, gone string }{
		{"valkey", "10.0.0", "valkey_version:10.0.0", ""},
		{"redis", "8.2.0", "redis_version:8.2.0", "valkey_version:"},
	} {
		p, err := StartVersionProxy(vk.Addr, c.server, c.version)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var req []byte
		for _, cmd := range [][]any{{"HELLO", "2"}, {"SET", "k", "v"}, {"INFO", "server"}, {"GET", "k"}} {
			req, _ = resp.AppendCommand(req, cmd...)
		}
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		r := resp.NewReader(bufio.NewReader(conn), resp.Limits{})
		var got []resp.Value
		for range 4 {
			v, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		fields := map[string]string{}
		for i := 0; i+1 < len(got[0].Elems); i += 2 {
			fields[string(got[0].Elems[i].Str)] = got[0].Elems[i+1].Text()
		}
		if fields["server"] != c.server || fields["version"] != c.version || fields["mode"] != "standalone" {
			t.Errorf("%s %s: HELLO says %v", c.server, c.version, fields)
		}
		info := got[2].Text()
		if got[1].Text() != "OK" || !strings.Contains(info, c.infoLine+"\r\n") || !strings.Contains(info, "server_name:"+c.server) ||
			(c.gone != "" && strings.Contains(info, c.gone)) || got[3].Text() != "v" {
			t.Errorf("%s %s: replies %q, %q…, %q", c.server, c.version, got[1].Text(), info[:min(200, len(info))], got[3].Text())
		}
		if len(p.Clients()) != 1 {
			t.Errorf("clients %v, want the one relayed connection", p.Clients())
		}
		conn.Close()
		p.Close()
	}
}
