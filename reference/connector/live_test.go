package connector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// TestLive runs the client against a real Valkey 8.1.1 (one server for all subtests).
func TestLive(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	// No deadline: the subtests' ten thousands of calls take what a busy machine gives them; a
	// hang is the go test -timeout's to report.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dial := func(t *testing.T, opt Options) *Conn {
		t.Helper()
		c, err := Dial(ctx, addr, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	t.Run("hello", func(t *testing.T) {
		info := dial(t, Options{}).Server()
		if info.Server != "valkey" || !strings.HasPrefix(info.Version, "8.1.") || info.Mode != "standalone" || info.Proto != 2 || info.ID <= 0 {
			t.Fatalf("HELLO: %+v", info)
		}
	})

	t.Run("concurrent callers share one socket in order", func(t *testing.T) {
		c := dial(t, Options{})
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for g := 0; g < 50; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					want := fmt.Sprintf("g%d-%d", g, i)
					v, err := c.Do(ctx, "ECHO", want)
					if err != nil || v.Text() != want {
						errs <- fmt.Errorf("ECHO %s: got %q, %v", want, v.Text(), err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("pipeline of 10000 in order", func(t *testing.T) {
		c := dial(t, Options{})
		var b Batch
		for i := 0; i < 10000; i++ {
			b.Add("ECHO", i)
		}
		out, err := c.Exec(ctx, &b, nil)
		if err != nil || len(out) != 10000 {
			t.Fatalf("%d replies, %v", len(out), err)
		}
		for i, v := range out {
			if n, err := v.Int64(); err != nil || n != int64(i) {
				t.Fatalf("reply %d is %q", i, v.Text())
			}
		}
	})

	t.Run("typed errors", func(t *testing.T) {
		c := dial(t, Options{})
		c.Do(ctx, "SET", "str", "x")
		_, err := c.Do(ctx, "LPUSH", "str", "y")
		if !errors.Is(err, resp.ErrWrongType) {
			t.Fatalf("got %v, want WRONGTYPE", err)
		}
		_, err = c.Do(ctx, "EVALSHA", strings.Repeat("0", 40), 0)
		if !errors.Is(err, resp.ErrNoScript) {
			t.Fatalf("got %v, want NOSCRIPT", err)
		}
		stale := NewScript("stale", "return redis.error_reply('EMQSTALE token 3 is not 4')")
		_, err = c.EvalSha(ctx, stale, nil)
		if !errors.Is(err, emqerr.Stale) {
			t.Fatalf("got %v, want EMQSTALE", err)
		}
	})

	t.Run("evalsha first, reload once after flush", func(t *testing.T) {
		var tap lockedBuffer
		c := dial(t, Options{Tap: &tap})
		incr := NewScript("incr", "return redis.call('INCR', KEYS[1])")
		if err := c.LoadScript(ctx, incr); err != nil {
			t.Fatal(err)
		}
		tap.Reset()
		if v, err := c.EvalSha(ctx, incr, []string{"ctr:a"}); err != nil || v.Int != 1 {
			t.Fatalf("first: %v %v", v, err)
		}
		if w := tap.String(); !strings.Contains(w, "EVALSHA") || strings.Contains(w, "$4\r\nEVAL\r\n") {
			t.Fatalf("wire %q", w)
		}
		if _, err := c.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if v, err := c.EvalSha(ctx, incr, []string{"ctr:a"}); err != nil || v.Int != 2 {
			t.Fatalf("after flush: %v %v", v, err)
		}
		if v, _ := c.Do(ctx, "GET", "ctr:a"); v.Text() != "2" {
			t.Fatalf("counter %q, want 2: the script ran twice or not at all", v.Text())
		}
	})

	t.Run("batch evalsha reloads after flush", func(t *testing.T) {
		c := dial(t, Options{})
		incr := NewScript("incr-b", "return redis.call('INCRBY', KEYS[1], ARGV[1])")
		c.Do(ctx, "SCRIPT", "FLUSH")
		var b Batch
		for i := 0; i < 5; i++ {
			b.EvalSha(incr, []string{"ctr:b"}, 1)
		}
		b.Add("PING")
		out, err := c.Exec(ctx, &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if out[i].Type != resp.Integer {
				t.Fatalf("reply %d: %q", i, out[i].Text())
			}
		}
		if v, _ := c.Do(ctx, "GET", "ctr:b"); v.Text() != "5" {
			t.Fatalf("counter %q, want 5", v.Text())
		}
	})

	t.Run("script sha mismatch is typed", func(t *testing.T) {
		c := dial(t, Options{})
		bad := NewScript("bad", "return 1")
		bad.SHA1 = strings.Repeat("a", 40)
		_, err := c.EvalSha(ctx, bad, nil)
		var se *ScriptSHAError
		if !errors.Is(err, ErrScriptSHA) || !errors.As(err, &se) {
			t.Fatalf("got %v, want *ScriptSHAError", err)
		}
	})

	t.Run("onconnect runs first and again on reconnect", func(t *testing.T) {
		var tap lockedBuffer
		runs := 0
		c := dial(t, Options{Tap: &tap, OnConnect: func(ctx context.Context, c *Conn) error {
			runs++
			_, err := c.Do(ctx, "SET", "fence", runs)
			return err
		}})
		c.Do(ctx, "PING")
		if err := c.Reconnect(ctx); err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, "PING")
		want := "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n*3\r\n$3\r\nSET\r\n$5\r\nfence\r\n$1\r\n1\r\n*1\r\n$4\r\nPING\r\n" +
			"*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n*3\r\n$3\r\nSET\r\n$5\r\nfence\r\n$1\r\n2\r\n*1\r\n$4\r\nPING\r\n"
		if got := tap.String(); got != want {
			t.Fatalf("wire\n%q\nwant\n%q", got, want)
		}
	})

	t.Run("blocking pop on a dedicated conn", func(t *testing.T) {
		blk := dial(t, Options{})
		other := dial(t, Options{})
		go func() {
			time.Sleep(50 * time.Millisecond)
			other.Do(ctx, "RPUSH", "wake", "1")
		}()
		v, err := blk.Do(ctx, "BLPOP", "wake", 60) // answered by the push, however late it comes
		if err != nil || len(v.Elems) != 2 || v.Elems[1].Text() != "1" {
			t.Fatalf("BLPOP: %v %v", v, err)
		}
		v, err = blk.Do(ctx, "BLPOP", "wake", 0.05)
		if err != nil || !v.Null {
			t.Fatalf("BLPOP timeout: %v %v", v, err)
		}
	})

	t.Run("monitor sees commands", func(t *testing.T) {
		m, err := NewMonitor(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		c := dial(t, Options{})
		c.Do(ctx, "SET", "mon", "a b\x00")
		for {
			line, err := m.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ml, err := ParseMonitorLine(line)
			if err != nil {
				t.Fatal(err)
			}
			if len(ml.Args) == 3 && ml.Args[0] == "SET" {
				if ml.Args[2] != "a b\x00" {
					t.Fatalf("monitored %q", ml.Args)
				}
				break
			}
		}
	})

	t.Run("reply types", func(t *testing.T) {
		c := dial(t, Options{})
		bin := []byte("\x00\r\n\xff")
		c.Do(ctx, "SET", "bin", bin)
		c.Do(ctx, "SET", "empty", "")
		out, err := c.Pipeline(ctx,
			Cmd{Args: []any{"PING"}},
			Cmd{Args: []any{"GET", "bin"}},
			Cmd{Args: []any{"GET", "empty"}},
			Cmd{Args: []any{"GET", "absent"}},
			Cmd{Args: []any{"EVAL", "return {1, 'two', {3, {}}}", 0}},
			Cmd{Args: []any{"BLPOP", "nothing", "0.01"}},
			Cmd{Args: []any{"INCRBY", "n", -5}},
			Cmd{Args: []any{"NOSUCHCMD"}},
		)
		if err != nil {
			t.Fatal(err)
		}
		checks := []bool{
			out[0].Type == resp.SimpleString && out[0].Text() == "PONG",
			out[1].Type == resp.BulkString && bytes.Equal(out[1].Str, bin),
			out[2].Type == resp.BulkString && !out[2].Null && len(out[2].Str) == 0,
			out[3].Type == resp.BulkString && out[3].Null,
			out[4].Type == resp.Array && len(out[4].Elems) == 3 && out[4].Elems[2].Elems[0].Int == 3 && len(out[4].Elems[2].Elems[1].Elems) == 0,
			out[5].Type == resp.Array && out[5].Null,
			out[6].Type == resp.Integer && out[6].Int == -5,
			out[7].Type == resp.ErrorReply && out[7].Err().(*resp.ServerError).Kind == "ERR",
		}
		for i, ok := range checks {
			if !ok {
				t.Errorf("reply %d: %+v", i, out[i])
			}
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}
