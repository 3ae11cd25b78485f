package connector

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frozenServer answers like Valkey until a connection is sent FREEZE: from then on that
// connection reads nothing and answers nothing, its socket left open (a frozen path). New
// connections are answered. The stall channel holds every frozen handler until the test ends.
func frozenServer(t *testing.T, slow time.Duration) (addr string, frozen *atomic.Int32) {
	t.Helper()
	frozen = new(atomic.Int32)
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
		}
		return "+PONG\r\n", false
	})
	t.Cleanup(func() { close(stall) }) // runs before fakeServer's, which waits for its handlers
	return addr, frozen
}

// A call that gives up on a frozen socket makes it suspect; the health check's PING goes
// unanswered within HealthTimeout, so the socket is poisoned and the redial replaces it.
func TestSuspectSocketReplaced(t *testing.T) {
	addr, frozen := frozenServer(t, 0)
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
func TestShortDeadlinesKeepLiveSocket(t *testing.T) {
	addr, _ := frozenServer(t, 150*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 2 * time.Second, HealthInterval: -1})
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

// A slow but live server answers the health check: the socket stays.
func TestLateReplyKeepsSocket(t *testing.T) {
	addr, _ := frozenServer(t, 300*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 2 * time.Second, HealthInterval: -1})
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
	if v, err := c.Do(context.Background(), "PING"); err != nil || v.Text() != "PONG" {
		t.Fatalf("PING after the late reply: %v %v", v, err)
	}
	time.Sleep(100 * time.Millisecond) // the check's own reply has come by now
	if c.Err() != nil || c.Reconnects() != 0 {
		t.Fatalf("err %v, reconnects %d: a late reply must not close the socket", c.Err(), c.Reconnects())
	}
}

// The watcher notices a silent socket with nobody calling, and a call without any deadline on
// a frozen socket is failed by it instead of hanging.
func TestWatcherChecksIdleAndStalled(t *testing.T) {
	addr, _ := frozenServer(t, 0)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second,
		HealthTimeout: 100 * time.Millisecond, HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond) // idle: PINGed and answered
	if c.Err() != nil {
		t.Fatalf("an idle live socket was poisoned: %v", c.Err())
	}
	start := time.Now()
	_, err = c.Do(context.Background(), "FREEZE") // no deadline at all
	if !errors.Is(err, ErrUnhealthy) || time.Since(start) > 2*time.Second {
		t.Fatalf("a call without deadline on a frozen socket: %v after %v, want ErrUnhealthy within 2 intervals + the timeout",
			err, time.Since(start))
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
	start := time.Now()
	_, err = Dial(context.Background(), ln.Addr().String(), Options{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || took < DefaultDialTimeout-100*time.Millisecond || took > DefaultDialTimeout+2*time.Second {
		t.Fatalf("Dial = %v after %v: want DeadlineExceeded after about %v", err, took, DefaultDialTimeout)
	}
}

// A backlog longer than HealthTimeout is no evidence while its replies keep coming: the PING
// waits behind them, and the check goes on as long as replies arrive.
func TestBacklogStillAnsweringKeepsSocket(t *testing.T) {
	addr, _ := frozenServer(t, 150*time.Millisecond)
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true,
		HealthTimeout: 300 * time.Millisecond, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for range 6 { // 6 × 150 ms of replies owed ahead of the check, well past its 300 ms
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
	time.Sleep(400 * time.Millisecond) // the PING's reply is in
	if c.Err() != nil || c.Reconnects() != 0 {
		t.Fatalf("err %v, reconnects %d: a backlog still answering must keep its socket", c.Err(), c.Reconnects())
	}
}
