package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/fence"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		info connector.ServerInfo
		ok   bool
	}{
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "standalone"}, true},
		{connector.ServerInfo{Server: "valkey", Version: "8.1.0", Mode: "standalone"}, true},
		{connector.ServerInfo{Server: "valkey", Version: "9.0.0", Mode: "standalone"}, true},
		{connector.ServerInfo{Server: "valkey", Version: "8.10", Mode: "standalone"}, true},
		{connector.ServerInfo{Server: "valkey", Version: "8.0.9", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "7.2.4", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "cluster"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "sentinel"}, false},
		{connector.ServerInfo{Server: "redis", Version: "8.2.0", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "Valkey", Version: "8.1.1", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "8.1.1-rc1", Mode: "standalone"}, false},
		{connector.ServerInfo{Server: "valkey", Version: "", Mode: "standalone"}, false},
		{connector.ServerInfo{}, false},
	}
	for _, c := range cases {
		err := fence.Check(c.info, fence.Options{})
		if c.ok != (err == nil) {
			t.Errorf("Check(%+v) = %v, want ok=%v", c.info, err, c.ok)
		}
		if err != nil && !errors.Is(err, emqerr.Server) {
			t.Errorf("Check(%+v) = %v, want EMQSERVER", c.info, err)
		}
		var logged []string
		err = fence.Check(c.info, fence.Options{AllowEngine: true, Logf: func(f string, a ...any) { logged = append(logged, f) }})
		if err != nil || (len(logged) > 0) == c.ok {
			t.Errorf("AllowEngine Check(%+v) = %v, logged %v", c.info, err, logged)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// private starts a server of our own: these tests rewrite the deployment's bundle record.
func private(t *testing.T, kind string) string {
	return enginestest.ValkeyWith(t, engines.ValkeyOptions{Kind: kind, Args: []string{"--databases", "1"}}).Addr
}

func raw(t *testing.T, addr string) *connector.Conn {
	c, err := connector.Dial(ctxT(t), addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFenceInstallsThenChecks(t *testing.T) {
	ctx, addr := ctxT(t), private(t, "")
	b, err := lua.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := raw(t, addr)
	if o, err := fence.Run(ctx, c, b); err != nil || o != fence.Installed {
		t.Fatalf("first fence = %q, %v", o, err)
	}
	v, _ := c.Do(ctx, "HGET", "{emq}:bundle", "digest")
	if string(v.Str) != b.Digest() {
		t.Fatalf("recorded digest %q, want %q", v.Str, b.Digest())
	}
	if o, err := fence.Run(ctx, c, b); err != nil || o != fence.OK {
		t.Fatalf("second fence = %q, %v", o, err)
	}
	// Another bundle recorded: every dial is refused with EMQVERSION.
	c.Do(ctx, "HSET", "{emq}:bundle", "version", "echomq:1.9.0", "digest", strings.Repeat("ab", 20))
	_, err = fence.Run(ctx, c, b)
	var e *emqerr.Error
	if !errors.As(err, &e) || e.Type != emqerr.TypeVersion {
		t.Fatalf("fence over another bundle = %v, want *emqerr.Error EMQVERSION", err)
	}
	if _, err := fence.Dial(ctx, addr, b, fence.Options{}, connector.Options{}); !errors.Is(err, emqerr.Version) {
		t.Fatalf("dial over another bundle = %v, want EMQVERSION", err)
	}
	// Same version, different digest: still refused.
	c.Do(ctx, "HSET", "{emq}:bundle", "version", lua.Version)
	if _, err := fence.Dial(ctx, addr, b, fence.Options{}, connector.Options{}); !errors.Is(err, emqerr.Version) {
		t.Fatalf("dial over another digest = %v, want EMQVERSION", err)
	}
}

func TestWrongKindServers(t *testing.T) {
	b, _ := lua.Load()
	for _, kind := range []string{engines.KindRedis, engines.KindValkey80} {
		t.Run(kind, func(t *testing.T) {
			ctx, addr := ctxT(t), private(t, kind)
			_, err := fence.Dial(ctx, addr, b, fence.Options{}, connector.Options{})
			if !errors.Is(err, emqerr.Server) {
				t.Fatalf("dial %s = %v, want EMQSERVER", kind, err)
			}
			// Refused before the fence: nothing was recorded.
			c := raw(t, addr)
			if v, _ := c.Do(ctx, "EXISTS", "{emq}:bundle"); v.Int != 0 {
				t.Fatal("the fence ran on a refused server")
			}
			var logged int
			admitted, err := fence.Dial(ctx, addr, b, fence.Options{AllowEngine: true, Logf: func(string, ...any) { logged++ }}, connector.Options{})
			if err != nil || logged != 1 {
				t.Fatalf("explicit opt-in: %v (logged %d)", err, logged)
			}
			admitted.Close()
		})
	}
}

// The fence runs before any other command at connect and again at every reconnect.
func TestFenceFirstAndOnReconnect(t *testing.T) {
	ctx, addr := ctxT(t), private(t, "")
	b, _ := lua.Load()
	mon, err := connector.NewMonitor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	c, err := fence.Dial(ctx, addr, b, fence.Options{}, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Do(ctx, "PING")
	if err := c.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "PING")
	fs, _ := b.Script(lua.Fence)
	var seq []string
	for len(seq) < 6 {
		line, err := mon.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ml, err := connector.ParseMonitorLine(line)
		if err != nil || ml.Client == "lua" {
			continue
		}
		cmd := strings.ToUpper(ml.Args[0])
		if cmd == "EVALSHA" && ml.Args[1] == fs.SHA1 {
			cmd = "FENCE"
		}
		if cmd == "SCRIPT" {
			continue // NOSCRIPT → SCRIPT LOAD is part of running the fence
		}
		if cmd == "FENCE" && len(seq) > 0 && seq[len(seq)-1] == "FENCE" {
			continue // the EVALSHA that answered NOSCRIPT, then its retry
		}
		seq = append(seq, cmd)
	}
	want := []string{"HELLO", "FENCE", "PING", "HELLO", "FENCE", "PING"}
	if strings.Join(seq, " ") != strings.Join(want, " ") {
		t.Fatalf("wire %v, want %v", seq, want)
	}
}
