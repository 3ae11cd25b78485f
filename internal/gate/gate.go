// Package gate is the connector gate: eight checks of the kit's RESP2 client against a live
// Valkey 8.1.x, written as a deterministic transcript (no timings, ports, addresses or ids) that
// ends "PASS 8/8" when every check holds.
//
// The gate uses keys under "gate:" and runs SCRIPT FLUSH, so point it at a server of its own.
package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// check is one gate check; it logs through p and returns an error when it fails.
type check struct {
	name string
	run  func(ctx context.Context, g *gate, p *printer) error
}

var checks = []check{
	{"reply types round-trip", checkReplyTypes},
	{"a 10000-command pipeline returns in order", checkPipeline},
	{"server errors are typed", checkTypedErrors},
	{"the fatal fence after a protocol violation", checkFatalFence},
	{"HELLO 2 identifies Valkey 8.1.x standalone", checkHello},
	{"EVALSHA first, never EVAL", checkEvalShaFirst},
	{"recovery after SCRIPT FLUSH runs the script once", checkFlushRecovery},
	{"the measured wire of one EVALSHA", checkWire},
}

type gate struct {
	addr string
}

// Run runs the eight checks against the server at addr and writes the transcript to w. err is
// for a gate that could not run (w failed, no server); failed checks only lower passed.
func Run(ctx context.Context, addr string, w io.Writer) (passed, total int, err error) {
	g := &gate{addr: addr}
	p := &printer{w: w}
	p.line("# connector gate: the kit's RESP2 client against a live Valkey")
	total = len(checks)
	for i, ch := range checks {
		p.line("")
		p.line(fmt.Sprintf("check %d: %s", i+1, ch.name))
		if cerr := ch.run(ctx, g, p); cerr != nil {
			p.line("  FAIL: " + cerr.Error())
		} else {
			passed++
			p.line("  ok")
		}
		if p.err != nil {
			return passed, total, p.err
		}
	}
	p.line("")
	verdict := "PASS"
	if passed != total {
		verdict = "FAIL"
	}
	p.line(fmt.Sprintf("%s %d/%d", verdict, passed, total))
	return passed, total, p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = io.WriteString(p.w, s+"\n")
	}
}

func (p *printer) f(format string, a ...any) { p.line("  " + fmt.Sprintf(format, a...)) }

func (g *gate) dial(ctx context.Context, opt connector.Options) (*connector.Conn, error) {
	return connector.Dial(ctx, g.addr, opt)
}

// render prints a reply by type, deterministically.
func render(v resp.Value) string {
	switch v.Type {
	case resp.SimpleString:
		return "simple " + strconv.Quote(string(v.Str))
	case resp.ErrorReply:
		return "error " + strconv.Quote(string(v.Str))
	case resp.Integer:
		return "integer " + strconv.FormatInt(v.Int, 10)
	case resp.BulkString:
		if v.Null {
			return "nil bulk"
		}
		return "bulk " + strconv.Quote(string(v.Str))
	case resp.Array:
		if v.Null {
			return "nil array"
		}
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = render(e)
		}
		return "array[" + strings.Join(parts, ", ") + "]"
	}
	return "?"
}

func checkReplyTypes(ctx context.Context, g *gate, p *printer) error {
	c, err := g.dial(ctx, connector.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	bin := "\x00\r\n\xff$*-+:"
	cmds := []struct {
		args []any
		want string
	}{
		{[]any{"DEL", "gate:bin", "gate:empty", "gate:absent"}, ""},
		{[]any{"SET", "gate:bin", []byte(bin)}, `simple "OK"`},
		{[]any{"SET", "gate:empty", ""}, `simple "OK"`},
		{[]any{"PING"}, `simple "PONG"`},
		{[]any{"GET", "gate:bin"}, "bulk " + strconv.Quote(bin)},
		{[]any{"GET", "gate:empty"}, `bulk ""`},
		{[]any{"GET", "gate:absent"}, "nil bulk"},
		{[]any{"INCRBY", "gate:absent-int", -7}, "integer -7"},
		{[]any{"EVAL", "return {1, 'two', {3, {}, {'x'}}}", 0}, `array[integer 1, bulk "two", array[integer 3, array[], array[bulk "x"]]]`},
		{[]any{"BLPOP", "gate:absent-list", "0.01"}, "nil array"},
		{[]any{"NOSUCHCMD", "a"}, `error "ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' "`},
		{[]any{"DEL", "gate:bin", "gate:empty", "gate:absent-int"}, "integer 3"},
	}
	pipe := make([]connector.Cmd, len(cmds))
	for i, cmd := range cmds {
		pipe[i] = connector.Cmd{Args: cmd.args}
	}
	out, err := c.Pipeline(ctx, pipe...)
	if err != nil {
		return err
	}
	var bad int
	for i, cmd := range cmds {
		if cmd.want == "" {
			continue
		}
		got := render(out[i])
		p.f("%s -> %s", cmdText(cmd.args), got)
		if got != cmd.want {
			p.f("  want %s", cmd.want)
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d replies differ", bad)
	}
	return nil
}

func cmdText(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			parts[i] = v
			if strings.ContainsAny(v, " \r\n\x00'") || v == "" {
				parts[i] = strconv.Quote(v)
			}
		case []byte:
			parts[i] = strconv.Quote(string(v))
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, " ")
}

func checkPipeline(ctx context.Context, g *gate, p *printer) error {
	c, err := g.dial(ctx, connector.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	const n = 10000
	var b connector.Batch
	for i := 0; i < n; i++ {
		b.Add("ECHO", "gate-"+strconv.Itoa(i))
	}
	out, err := c.Exec(ctx, &b, nil)
	if err != nil {
		return err
	}
	p.f("sent %d ECHO commands in one write, got %d replies", n, len(out))
	if len(out) != n {
		return fmt.Errorf("%d replies for %d commands", len(out), n)
	}
	for i, v := range out {
		if want := "gate-" + strconv.Itoa(i); v.Type != resp.BulkString || string(v.Str) != want {
			return fmt.Errorf("reply %d is %s, want bulk %q", i, render(v), want)
		}
	}
	p.f("reply i is \"gate-i\" for every i (first %s, last %s)", render(out[0]), render(out[n-1]))
	return nil
}

func checkTypedErrors(ctx context.Context, g *gate, p *printer) error {
	c, err := g.dial(ctx, connector.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Do(ctx, "SET", "gate:str", "x"); err != nil {
		return err
	}
	defer c.Do(ctx, "DEL", "gate:str")
	_, err = c.Do(ctx, "LPUSH", "gate:str", "y")
	p.f("LPUSH on a string -> %v; errors.Is(err, resp.ErrWrongType) = %v", err, errors.Is(err, resp.ErrWrongType))
	if !errors.Is(err, resp.ErrWrongType) {
		return errors.New("WRONGTYPE not typed")
	}
	_, err = c.Do(ctx, "EVALSHA", strings.Repeat("0", 40), 0)
	p.f("EVALSHA of an unknown digest -> %v; errors.Is(err, resp.ErrNoScript) = %v", err, errors.Is(err, resp.ErrNoScript))
	if !errors.Is(err, resp.ErrNoScript) {
		return errors.New("NOSCRIPT not typed")
	}
	stale := connector.NewScript("gate-stale", "return redis.error_reply('EMQSTALE token 1 is not the live token 2')")
	_, err = c.EvalSha(ctx, stale, []string{"gate:str"})
	var se *resp.ServerError
	p.f("script redis.error_reply('EMQSTALE …') -> %v; errors.Is(err, emqerr.Stale) = %v", err, errors.Is(err, emqerr.Stale))
	if !errors.Is(err, emqerr.Stale) || !errors.As(err, &se) || errors.Is(err, emqerr.Version) {
		return errors.New("EMQSTALE not typed")
	}
	if e := (*emqerr.Error)(nil); !errors.As(err, &e) || e.Type != emqerr.TypeStale {
		return errors.New("EMQSTALE does not convert to *emqerr.Error")
	}
	p.f("as *emqerr.Error: type %s, message %q", emqerr.TypeStale, se.Message)
	return nil
}

func checkFatalFence(ctx context.Context, g *gate, p *printer) error {
	px, err := newCorruptor(g.addr)
	if err != nil {
		return err
	}
	defer px.close()
	c, err := connector.Dial(ctx, px.addr(), connector.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	if v, err := c.Do(ctx, "PING"); err != nil || v.Text() != "PONG" {
		return fmt.Errorf("PING through the proxy: %v %v", render(v), err)
	}
	p.f("PING through the proxy -> simple \"PONG\"")
	px.arm()
	_, err = c.Do(ctx, "ECHO", "hello")
	var fe *connector.FatalError
	p.f("ECHO with its reply's type byte corrupted to '!' -> %v", err)
	if !errors.As(err, &fe) || !errors.Is(err, resp.ErrProtocol) {
		return errors.New("the corrupted reply did not fail as a FatalError caused by a protocol violation")
	}
	for i, args := range [][]any{{"PING"}, {"GET", "gate:any"}, {"ECHO", "again"}} {
		_, err := c.Do(ctx, args...)
		p.f("later call %d (%s) -> errors.Is(err, ErrFatal) = %v", i+1, cmdText(args), errors.Is(err, connector.ErrFatal))
		if !errors.Is(err, connector.ErrFatal) {
			return fmt.Errorf("later call %d: %v", i+1, err)
		}
	}
	if _, err := c.Pipeline(ctx, connector.Cmd{Args: []any{"PING"}}); !errors.Is(err, connector.ErrFatal) {
		return fmt.Errorf("later pipeline: %v", err)
	}
	p.f("later pipeline -> errors.Is(err, ErrFatal) = true")
	if err := c.Reconnect(ctx); err != nil {
		return err
	}
	v, err := c.Do(ctx, "PING")
	p.f("after Reconnect: PING -> %s", render(v))
	if err != nil || v.Text() != "PONG" {
		return fmt.Errorf("after reconnect: %v", err)
	}
	return nil
}

func checkHello(ctx context.Context, g *gate, p *printer) error {
	c, err := g.dial(ctx, connector.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	s := c.Server()
	p.f("server %s, version %s, proto %d, mode %s, role %s, id > 0: %v", s.Server, s.Version, s.Proto, s.Mode, s.Role, s.ID > 0)
	if s.Server != "valkey" || !strings.HasPrefix(s.Version, "8.1.") || s.Proto != 2 || s.Mode != "standalone" || s.ID <= 0 {
		return errors.New("not Valkey 8.1.x standalone over RESP2")
	}
	return nil
}

// commandsOf splits tapped bytes into commands, rendered as their argument lists.
func commandsOf(wire []byte) ([]string, error) {
	rd := resp.NewReader(bufioReader(wire), resp.Limits{})
	var out []string
	for {
		v, err := rd.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = string(e.Str)
			if len(parts[i]) > 48 {
				parts[i] = parts[i][:40] + "…"
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
}

// The gate's counter script: the transition-shaped script the recovery checks run.
const counterSource = "return redis.call('INCR', KEYS[1])"

func checkEvalShaFirst(ctx context.Context, g *gate, p *printer) error {
	var tap lockedBuffer
	c, err := g.dial(ctx, connector.Options{Tap: &tap})
	if err != nil {
		return err
	}
	defer c.Close()
	s := connector.NewScript("gate-counter", counterSource)
	if err := c.LoadScript(ctx, s); err != nil {
		return err
	}
	m, err := connector.NewMonitor(ctx, g.addr)
	if err != nil {
		return err
	}
	defer m.Close()
	tap.reset()
	if _, err := c.EvalSha(ctx, s, []string{"gate:ctr6"}); err != nil {
		return err
	}
	if _, err := c.Do(ctx, "DEL", "gate:ctr6"); err != nil {
		return err
	}
	cmds, err := commandsOf(tap.bytes())
	if err != nil {
		return err
	}
	p.f("tap after one call of a loaded script: %s", strings.Join(cmds, " | "))
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "EVALSHA "+s.SHA1+" 1 gate:ctr6") {
		return errors.New("the first call did not send EVALSHA of the script's SHA1")
	}
	var seen []string
	for {
		line, err := m.Next(ctx)
		if err != nil {
			return err
		}
		ml, err := connector.ParseMonitorLine(line)
		if err != nil {
			return err
		}
		who := "client"
		if ml.Client == "lua" {
			who = "lua"
		}
		seen = append(seen, who+": "+ml.Args[0])
		if ml.Args[0] == "EVAL" {
			return errors.New("MONITOR saw EVAL")
		}
		if ml.Args[0] == "DEL" {
			break
		}
	}
	p.f("MONITOR saw: %s", strings.Join(seen, " | "))
	if len(seen) != 3 || seen[0] != "client: EVALSHA" || seen[1] != "lua: INCR" {
		return errors.New("MONITOR did not see EVALSHA then the script's INCR")
	}
	return nil
}

func checkFlushRecovery(ctx context.Context, g *gate, p *printer) error {
	var tap lockedBuffer
	c, err := g.dial(ctx, connector.Options{Tap: &tap})
	if err != nil {
		return err
	}
	defer c.Close()
	s := connector.NewScript("gate-counter", counterSource)
	key := "gate:ctr7"
	if _, err := c.Do(ctx, "DEL", key); err != nil {
		return err
	}
	defer c.Do(ctx, "DEL", key)
	v, err := c.EvalSha(ctx, s, []string{key})
	if err != nil {
		return err
	}
	p.f("first call -> %s", render(v))
	if _, err := c.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		return err
	}
	p.f("SCRIPT FLUSH")
	tap.reset()
	v, err = c.EvalSha(ctx, s, []string{key})
	if err != nil {
		return err
	}
	cmds, err := commandsOf(tap.bytes())
	if err != nil {
		return err
	}
	p.f("call after the flush -> %s; wire: %s", render(v), strings.Join(cmds, " | "))
	got, err := c.Do(ctx, "GET", key)
	if err != nil {
		return err
	}
	p.f("counter is %s (one call before the flush, one after)", got.Text())
	if v.Int != 2 || got.Text() != "2" {
		return errors.New("the script ran twice or not at all across the reload")
	}
	if len(cmds) != 3 || !strings.HasPrefix(cmds[0], "EVALSHA") || !strings.HasPrefix(cmds[1], "SCRIPT LOAD") || !strings.HasPrefix(cmds[2], "EVALSHA") {
		return errors.New("the recovery was not EVALSHA, SCRIPT LOAD, EVALSHA")
	}
	return nil
}

func checkWire(ctx context.Context, g *gate, p *printer) error {
	var tap lockedBuffer
	c, err := g.dial(ctx, connector.Options{Tap: &tap})
	if err != nil {
		return err
	}
	defer c.Close()
	s := connector.NewScript("gate-counter", counterSource)
	if err := c.LoadScript(ctx, s); err != nil {
		return err
	}
	key, arg := "emq:{gate}:ctr", "1"
	tap.reset()
	if _, err := c.EvalSha(ctx, s, []string{key}, arg); err != nil {
		return err
	}
	c.Do(ctx, "DEL", key)
	got := tap.bytes()
	end := bytes.Index(got, []byte("*2\r\n$3\r\nDEL"))
	if end < 0 {
		return errors.New("tap lacks the DEL after the EVALSHA")
	}
	got = got[:end]
	// The expectation is spelled out by hand, independently of the writer.
	want := "*5\r\n$7\r\nEVALSHA\r\n$40\r\n" + s.SHA1 + "\r\n$1\r\n1\r\n$14\r\n" + key + "\r\n$1\r\n" + arg + "\r\n"
	p.f("EVALSHA %s (script %q) 1 %s %s puts %d bytes on the socket:", s.SHA1, counterSource, key, arg, len(got))
	p.f("%s", strconv.Quote(string(got)))
	if string(got) != want {
		p.f("want %s", strconv.Quote(want))
		return errors.New("the wire differs")
	}
	return nil
}
