// Package fence is the EchoMQ handshake (canon §5, contracts/PROTOCOL.md A1/A12): the server
// check on the HELLO 2 reply and the bundle fence script. Dial wires both in as the connector's
// OnConnect, so they run at connect and at every reconnect before any other command.
package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// MinVersion is the oldest Valkey the canon admits.
const MinVersion = "8.1.0"

// Options tune the handshake. The zero value is the canon's strict check.
type Options struct {
	// AllowEngine admits a server that fails the engine check (another kind, an older version,
	// a cluster or sentinel) for experiments. It is never the default, and every admission is
	// reported through Logf.
	AllowEngine bool
	// Logf receives the admission notices; nil discards them.
	Logf func(format string, args ...any)
	// Source, when set, is run as the fence script in place of the bundle's (an edited copy the
	// kit's tests judge on behaviour); the digest presented is still the bundle's.
	Source string
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Check judges the HELLO 2 reply: the server must be valkey ≥ 8.1.0 in standalone mode, else
// EMQSERVER (unless opt.AllowEngine admits it, logged).
func Check(info connector.ServerInfo, opt Options) error {
	err := check(info, opt)
	if err != nil && opt.AllowEngine {
		opt.logf("fence: admitting a non-canon engine by explicit opt-in: %v", err)
		return nil
	}
	return err
}

func check(info connector.ServerInfo, opt Options) error {
	if info.Server != "valkey" {
		return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("server %q %s: want valkey >= %s", info.Server, info.Version, MinVersion)}
	}
	ok, err := atLeast(info.Version, MinVersion)
	if err != nil {
		return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("server version %q: %v", info.Version, err)}
	}
	if !ok {
		return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("valkey %s: want >= %s", info.Version, MinVersion)}
	}
	if info.Mode != "standalone" {
		return &emqerr.Error{Type: emqerr.TypeServer, Message: fmt.Sprintf("valkey mode %q: want standalone", info.Mode)}
	}
	return nil
}

// atLeast compares dotted numeric versions ("8.1.1" >= "8.1.0"); missing parts count as 0.
func atLeast(have, want string) (bool, error) {
	h, err := parts(have)
	if err != nil {
		return false, err
	}
	w, err := parts(want)
	if err != nil {
		return false, err
	}
	for i := 0; i < max(len(h), len(w)); i++ {
		var a, b int
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return a > b, nil
		}
	}
	return true, nil
}

func parts(v string) ([]int, error) {
	if v == "" {
		return nil, errors.New("empty version")
	}
	fs := strings.Split(v, ".")
	out := make([]int, len(fs))
	for i, f := range fs {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("not a dotted version: %q", v)
		}
		out[i] = n
	}
	return out, nil
}

// Outcome is the fence script's answer.
type Outcome string

// The fence script's two successful answers.
const (
	Installed Outcome = "installed" // the bundle was absent and is now recorded
	OK        Outcome = "ok"        // the recorded bundle is ours
)

// Run runs the fence script with the bundle's version and digest: Installed, OK, or EMQVERSION
// when the deployment records another bundle.
func Run(ctx context.Context, conn *connector.Conn, b *lua.Bundle) (Outcome, error) {
	ls, ok := b.Script(lua.Fence)
	if !ok {
		return "", errors.New("fence: the bundle has no fence script")
	}
	return run(ctx, conn, connector.NewScript(ls.Name, ls.Source), b.Digest())
}

// RunScript runs s as the fence script with the bundle's digest: the cluster router's way to
// run the one script it keeps (the bundle's, or Options.Source in its place) on any node.
func RunScript(ctx context.Context, conn *connector.Conn, s *connector.Script, digest string) (Outcome, error) {
	return run(ctx, conn, s, digest)
}

func run(ctx context.Context, conn *connector.Conn, s *connector.Script, digest string) (Outcome, error) {
	v, err := conn.EvalSha(ctx, s, []string{keys.Bundle()}, lua.Version, digest)
	if err != nil {
		return "", fmt.Errorf("fence: %w", err)
	}
	switch o := Outcome(v.Str); o {
	case Installed, OK:
		return o, nil
	}
	return "", fmt.Errorf("fence: unexpected reply %s %q", v.Type, v.Text())
}

// OnConnect is the connector hook: the server check, then the bundle fence.
func OnConnect(b *lua.Bundle, opt Options) func(context.Context, *connector.Conn) error {
	ls, ok := b.Script(lua.Fence)
	src := ls.Source
	if opt.Source != "" {
		src = opt.Source
	}
	s, digest := connector.NewScript(lua.Fence, src), b.Digest()
	return func(ctx context.Context, c *connector.Conn) error {
		if err := Check(c.Server(), opt); err != nil {
			return err
		}
		if !ok {
			return errors.New("fence: the bundle has no fence script")
		}
		_, err := run(ctx, c, s, digest)
		return err
	}
}

// Dial connects with the handshake as OnConnect (any OnConnect in copt is replaced). A server
// that refuses HELLO 2 is EMQSERVER, like one that answers it wrongly.
func Dial(ctx context.Context, addr string, b *lua.Bundle, opt Options, copt connector.Options) (*connector.Conn, error) {
	copt.OnConnect = OnConnect(b, opt)
	c, err := connector.Dial(ctx, addr, copt)
	if err != nil {
		return nil, Classify(err)
	}
	return c, nil
}

// Classify maps a dial or reconnect failure caused by HELLO refusal to EMQSERVER; other errors
// pass unchanged.
func Classify(err error) error {
	if errors.Is(err, connector.ErrHello) && !errors.Is(err, emqerr.Server) {
		return fmt.Errorf("%w: %w", &emqerr.Error{Type: emqerr.TypeServer, Message: "server refused HELLO 2"}, err)
	}
	return err
}
