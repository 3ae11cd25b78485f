package connector

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
)

// frozenServer answers like Valkey until a connection is sent FREEZE: from then on that
// connection reads nothing and answers nothing, its socket left open (a frozen path). New
// connections are answered. The stall channel holds every frozen handler until the test ends.
// pings counts the PINGs it answered.
func frozenServer(t *testing.T, slow time.Duration) (addr string, frozen, pings *atomic.Int32) {
	t.Helper()
	frozen, pings = new(atomic.Int32), new(atomic.Int32)
	stall := make(chan struct{})
	addr = fakeServer(t, func(cmd []string) (string, bool) {
		switch cmd[0] {
		case "FREEZE":
			frozen.Add(1)
			<-stall
			return "", true
		case "SLOW":
			time.Sleep(slow)
			return "+slow\r\n", false
		case "PING":
			pings.Add(1)
		}
		return "+PONG\r\n", false
	})
	t.Cleanup(func() { close(stall) }) // runs before fakeServer's, which waits for its handlers
	return addr, frozen, pings
}

// A call that gives up on a frozen socket makes it suspect; the health check's PING goes
// unanswered within HealthTimeout, so the socket is poisoned and the redial replaces it.
func TestSuspectSocketReplaced(t *testing.T) {
	addr, frozen, _ := frozenServer(t, 0)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 100 * time.Millisecond, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	_, err = c.Do(ctx, "FREEZE")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FREEZE: %v, want its deadline", err)
	}
	waitUntil(t, "the replacement", func() bool { _, err := c.Do(context.Background(), "PING"); return err == nil })
	took := time.Since(start)
	if frozen.Load() != 1 || c.Reconnects() != 1 {
		t.Fatalf("frozen %d, reconnects %d: want 1 and 1", frozen.Load(), c.Reconnects())
	}
	t.Logf("a frozen socket replaced %v after the call began (call deadline 100ms + health check 100ms)", took.Round(time.Millisecond))
}

// Many calls with short deadlines on a slow but live server (a heartbeat's deadline is a third
// of a lease) are no evidence: the health check behind them is answered and the socket stays.
// The check's own timeout is far beyond the server's pace (only a call's deadline is short
// here), so a busy machine cannot make a live server look frozen.
func TestShortDeadlinesKeepLiveSocket(t *testing.T) {
	addr, _, _ := frozenServer(t, 150*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 30 * time.Second, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := c.Do(ctx, "SLOW")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d: %v, want its deadline", i, err)
		}
	}
	if v, err := c.Do(context.Background(), "PING"); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING after the slow calls: %v %v", v, err)
	}
	if c.Err() != nil || c.Reconnects() != 0 {
		t.Fatalf("err %v, reconnects %d: a slow live server must keep its socket", c.Err(), c.Reconnects())
	}
}

// A slow but live server answers the health check: the socket stays. The check's timeout is far
// beyond the server's 300 ms, as in TestShortDeadlinesKeepLiveSocket.
func TestLateReplyKeepsSocket(t *testing.T) {
	addr, _, _ := frozenServer(t, 300*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 30 * time.Second, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = c.Do(ctx, "SLOW")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SLOW: %v", err)
	}
	// The check's PING went out before this one, on the same socket: its reply has come.
	if v, err := c.Do(context.Background(), "PING"); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING after the late reply: %v %v", v, err)
	}
	if c.Err() != nil || c.Reconnects() != 0 {
		t.Fatalf("err %v, reconnects %d: a late reply must not close the socket", c.Err(), c.Reconnects())
	}
}

// The watcher notices a silent socket with nobody calling, and a call without any deadline on
// a frozen socket is failed by it instead of hanging. The check's timeout (2 s) is far beyond a
// live in-process server's answer on a busy machine; the idle socket is watched for three
// checks, counted as the server answers them.
func TestWatcherChecksIdleAndStalled(t *testing.T) {
	addr, _, pings := frozenServer(t, 0)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second,
		HealthTimeout: 2 * time.Second, HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	await.Until(t, "three health checks of the idle socket", func() bool { return pings.Load() >= 3 })
	if c.Err() != nil {
		t.Fatalf("an idle live socket was poisoned: %v", c.Err())
	}
	// The FREEZE is never answered: only the watcher can end the call (a hang is the go test
	// -timeout's), and the error says it did.
	_, err = c.Do(context.Background(), "FREEZE") // no deadline at all
	if !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("a call without deadline on a frozen socket: %v, want ErrUnhealthy", err)
	}
}

// A request sent after a quiet spell is not met by the watcher's check at once: its server owes
// nothing older, so its silence counts from the request. Here the socket stays quiet for longer
// than an interval less a tick, then a call the server answers in 900 ms goes out; the check the
// old count (silence since the last reply, 2 s on the ticks of 0.5, 1, … 2.5 s) sent behind it at
// 2.5 s would time out after 250 ms and poison a live socket,
// as a PING behind a 2 MiB enqueue did on a loaded machine. The quiet spell is the situation,
// not a wait for an event: a longer one (a busy machine) only lets an idle check go first.
func TestRequestAfterAQuietSpellKeepsSocket(t *testing.T) {
	addr, _, _ := frozenServer(t, 900*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second,
		HealthTimeout: 250 * time.Millisecond, HealthInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(2200 * time.Millisecond)
	if v, err := c.Do(context.Background(), "SLOW"); err != nil || v.Text() != "slow" {
		t.Fatalf("SLOW after a quiet spell: %v %v", v, err)
	}
	if c.Err() != nil {
		t.Fatalf("a live socket was poisoned: %v", c.Err())
	}
}

// With neither DialTimeout nor a ctx deadline, a server that accepts and never answers still
// cannot hold Dial: DefaultDialTimeout bounds it.
func TestDialDefaultDeadline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	// The server never answers: only a deadline ends the Dial (without one it would hang, the go
	// test -timeout's to report), and not before DefaultDialTimeout.
	start := time.Now()
	_, err = Dial(context.Background(), ln.Addr().String(), Options{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || took < DefaultDialTimeout-100*time.Millisecond {
		t.Fatalf("Dial = %v after %v: want DeadlineExceeded after %v", err, took, DefaultDialTimeout)
	}
}

// A backlog longer than HealthTimeout is no evidence while its replies keep coming: the PING
// waits behind them, and the check goes on as long as replies arrive. The replies come every
// 50 ms, a twentieth of the check's 1 s timeout (a busy machine would have to stall a reply by
// the whole second to look frozen); the backlog is 30 of them, 1.5 s, well past the timeout.
func TestBacklogStillAnsweringKeepsSocket(t *testing.T) {
	addr, _, _ := frozenServer(t, 50*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: time.Second, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for range 30 { // 30 × 50 ms of replies owed ahead of the check, well past its 1 s
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Do(context.Background(), "SLOW"); err != nil {
				t.Errorf("a SLOW ahead of the check: %v", err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err = c.Do(ctx, "SLOW") // gives up: the socket is suspect, the PING queued behind all
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SLOW: %v", err)
	}
	wg.Wait()
	// The check's PING went out before this one, on the same socket: its reply has come.
	if v, err := c.Do(context.Background(), "PING"); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING after the backlog: %v %v", v, err)
	}
	if c.Err() != nil || c.Reconnects() != 0 {
		t.Fatalf("err %v, reconnects %d: a backlog still answering must keep its socket", c.Err(), c.Reconnects())
	}
}
