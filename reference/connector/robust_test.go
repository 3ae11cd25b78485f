package connector

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/reference/resp"
)

// A fake server on loopback, for robustness tests only: it answers HELLO like Valkey and then
// lets the test decide the raw bytes of every later reply.
const helloReply = "*14\r\n$6\r\nserver\r\n$6\r\nvalkey\r\n$7\r\nversion\r\n$5\r\n8.1.1\r\n" +
	"$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n" +
	"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"

// reply returns the raw bytes to send for a command and whether to close afterwards.
type reply func(cmd []string) (raw string, closeAfter bool)

func fakeServer(t *testing.T, h reply) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				rd := resp.NewReader(bufio.NewReader(nc), resp.Limits{})
				for {
					v, err := rd.Read()
					if err != nil {
						return
					}
					cmd := make([]string, len(v.Elems))
					for i, e := range v.Elems {
						cmd[i] = string(e.Str)
					}
					raw, closeAfter := helloReply, false
					if !strings.EqualFold(cmd[0], "HELLO") {
						raw, closeAfter = h(cmd)
					}
					if _, err := io.WriteString(nc, raw); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestHelloParsed(t *testing.T) {
	addr := fakeServer(t, func([]string) (string, bool) { return "+PONG\r\n", false })
	c, err := Dial(context.Background(), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := ServerInfo{Server: "valkey", Version: "8.1.1", Mode: "standalone", Proto: 2, ID: 7, Role: "master"}
	if got := c.Server(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestHelloRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		rd := resp.NewReader(bufio.NewReader(nc), resp.Limits{})
		if _, err := rd.Read(); err == nil {
			io.WriteString(nc, "-ERR unknown command 'HELLO'\r\n")
		}
		rd.Read() // hold the socket until the client goes
	}()
	_, err = Dial(context.Background(), ln.Addr().String(), Options{})
	var se *resp.ServerError
	if !errors.Is(err, ErrHello) || !errors.As(err, &se) || se.Kind != "ERR" {
		t.Fatalf("got %v, want ErrHello wrapping the ERR reply", err)
	}
}

// Each hostile reply must give a typed error and poison the connection: every later call
// fails with *FatalError at once, with no panic and no hang.
func TestPoisonedAfterBadStream(t *testing.T) {
	cases := []struct {
		name  string
		raw   string
		close bool
		cause func(error) bool
	}{
		{"closes mid-reply", "*3\r\n:1\r\n", true, isEOF},
		{"truncated bulk", "$10\r\nabc", true, isEOF},
		{"oversized length", "$99999999999\r\n", false, isProto},
		{"unknown type byte", "?what\r\n", false, isProto},
		{"bulk without CRLF", "$3\r\nabcXY", false, isProto},
		{"too deep", strings.Repeat("*1\r\n", 40) + ":1\r\n", false, isProto},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeServer(t, func(cmd []string) (string, bool) {
				if cmd[0] == "PING" {
					return "+PONG\r\n", false
				}
				return tc.raw, tc.close
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, addr, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if v, err := c.Do(ctx, "PING"); err != nil || v.Text() != "PONG" {
				t.Fatalf("PING before: %v %v", v, err)
			}
			_, err = c.Do(ctx, "GET", "k")
			var fe *FatalError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFatal) || !tc.cause(err) {
				t.Fatalf("got %v, want a *FatalError with the right cause", err)
			}
			for i := 0; i < 3; i++ {
				_, err := c.Do(ctx, "PING")
				if !errors.Is(err, ErrFatal) {
					t.Fatalf("later call %d: got %v, want ErrFatal", i, err)
				}
			}
			if _, err := c.Pipeline(ctx, Cmd{Args: []any{"PING"}}); !errors.Is(err, ErrFatal) {
				t.Fatalf("later pipeline: got %v", err)
			}
			if ctx.Err() != nil {
				t.Fatal("took until the test deadline: a hang")
			}
			// Reconnect clears the poison.
			if err := c.Reconnect(ctx); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Do(ctx, "PING"); err != nil || v.Text() != "PONG" {
				t.Fatalf("PING after reconnect: %v %v", v, err)
			}
		})
	}
}

func isEOF(err error) bool   { return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) }
func isProto(err error) bool { return errors.Is(err, resp.ErrProtocol) }

func TestUnsolicitedReplyPoisons(t *testing.T) {
	addr := fakeServer(t, func(cmd []string) (string, bool) {
		return "+PONG\r\n+EXTRA\r\n", false // one reply too many
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Do(ctx, "PING") // may or may not see the extra line before returning
	await.Until(t, "the extra line to poison the connection", func() bool { return c.Err() != nil })
	if err := c.Err(); !errors.Is(err, ErrUnsolicited) {
		t.Fatalf("got %v, want ErrUnsolicited", err)
	}
}

func TestCancelledCallerKeepsStreamAligned(t *testing.T) {
	release := make(chan struct{})
	addr := fakeServer(t, func(cmd []string) (string, bool) {
		switch cmd[0] {
		case "SLOW":
			<-release
			return "+slow\r\n", false
		case "PING": // the health check the abandoned call set off
			return "+PONG\r\n", false
		}
		return "$" + strconv.Itoa(len(cmd[1])) + "\r\n" + cmd[1] + "\r\n", false // ECHO
	})
	c, err := Dial(context.Background(), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server holds SLOW's reply until release, below: the call returns on its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = c.Do(ctx, "SLOW")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	done := make(chan resp.Value, 1)
	go func() {
		v, _ := c.Do(context.Background(), "ECHO", "mine")
		done <- v
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if v := <-done; v.Text() != "mine" {
		t.Fatalf("the next caller got %q: the abandoned reply was not consumed", v.Text())
	}
}

func TestBlockingDeadline(t *testing.T) {
	addr := fakeServer(t, func(cmd []string) (string, bool) {
		if cmd[0] == "BLPOP" {
			return "", false // a server that never answers
		}
		return "+PONG\r\n", false
	})
	c, err := Dial(context.Background(), addr, Options{BlockSlack: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server never answers: only the blocking deadline ends the call (the error says so;
	// without one the call would hang, the go test -timeout's to report), never before
	// timeout + slack.
	start := time.Now()
	_, err = c.Do(context.Background(), "BLPOP", "q", 0.2)
	if !errors.Is(err, ErrFatal) || !errors.Is(err, ErrDeadline) {
		t.Fatalf("got %v, want a fatal deadline error", err)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("deadline hit after %v, before timeout+slack = 300ms", el)
	}
}

func TestBlockingDeadlineDisarmed(t *testing.T) {
	addr := fakeServer(t, func(cmd []string) (string, bool) {
		if cmd[0] == "BLPOP" {
			return "*-1\r\n", false
		}
		return "+PONG\r\n", false
	})
	c, err := Dial(context.Background(), addr, Options{BlockSlack: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Do(context.Background(), "BLPOP", "q", "0.05"); err != nil || !v.Null {
		t.Fatalf("BLPOP: %v %v", v, err)
	}
	time.Sleep(250 * time.Millisecond) // well past the armed deadline: idle must stay healthy
	if err := c.Err(); err != nil {
		t.Fatalf("idle connection poisoned by a stale deadline: %v", err)
	}
	if _, err := c.Do(context.Background(), "PING"); err != nil {
		t.Fatal(err)
	}
}

func TestOnConnectRefuses(t *testing.T) {
	addr := fakeServer(t, func([]string) (string, bool) { return "+PONG\r\n", false })
	boom := errors.New("fence says no")
	_, err := Dial(context.Background(), addr, Options{OnConnect: func(ctx context.Context, c *Conn) error {
		if c.Server().Server != "valkey" {
			return errors.New("no HELLO before OnConnect")
		}
		return boom
	}})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the OnConnect error", err)
	}
}

func TestBadArgument(t *testing.T) {
	addr := fakeServer(t, func([]string) (string, bool) { return "+PONG\r\n", false })
	c, err := Dial(context.Background(), addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Do(context.Background(), "SET", "k", map[string]int{})
	var ae *resp.ArgError
	if !errors.As(err, &ae) || ae.Index != 2 {
		t.Fatalf("got %v, want *resp.ArgError at 2", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("a bad argument must not poison: %v", err)
	}
}

func TestParseMonitorLine(t *testing.T) {
	ml, err := ParseMonitorLine(`1700000000.123456 [0 127.0.0.1:5000] "EVALSHA" "ab\"c" "1" "k\x00\n"`)
	if err != nil {
		t.Fatal(err)
	}
	if ml.DB != 0 || ml.Client != "127.0.0.1:5000" || len(ml.Args) != 4 || ml.Args[1] != `ab"c` || ml.Args[3] != "k\x00\n" {
		t.Fatalf("got %+v", ml)
	}
}
