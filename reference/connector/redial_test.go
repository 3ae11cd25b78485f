package connector

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/reference/resp"
)

// A server that accepts and never answers cannot hold a Dial without a ctx deadline: dial,
// HELLO and OnConnect all run under DialTimeout.
func TestDialTimeoutCoversTheHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	// The server never answers: the Dial ends on a deadline, its own 200 ms and not the 5 s
	// default (what a handshake outside DialTimeout would wait), however busy the machine.
	start := time.Now()
	_, err = Dial(context.Background(), ln.Addr().String(), Options{DialTimeout: 200 * time.Millisecond})
	if took := time.Since(start); err == nil || took < 200*time.Millisecond || took >= DefaultDialTimeout {
		t.Fatalf("Dial = %v after %v: want a failure at the 200ms dial timeout", err, took)
	}
}

// With Redial, a lost socket fails calls at once (ErrConnLost, retriable) and is replaced by
// itself, HELLO and OnConnect first; a refusal of the new socket is final (ErrRefused).
func TestRedialAfterLoss(t *testing.T) {
	refuse := make(chan bool, 1)
	refuse <- false
	connects := 0
	addr := fakeServer(t, func(cmd []string) (string, bool) {
		switch cmd[0] {
		case "PING":
			return "+PONG\r\n", false
		case "QUIT":
			return "+OK\r\n", true // the server drops the socket
		}
		return "-ERR unknown\r\n", false
	})
	var lost []error
	loading := 0 // the handshakes still to answer LOADING, as a restarting server does
	c, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second, Redial: true, RedialMax: 50 * time.Millisecond,
		OnConnect: func(ctx context.Context, c *Conn) error {
			connects++
			if loading > 0 {
				loading--
				return resp.ParseServerError("LOADING Valkey is loading the dataset in memory")
			}
			r := <-refuse
			refuse <- r
			if r {
				return errors.New("EMQVERSION another bundle")
			}
			_, err := c.Do(ctx, "PING")
			return err
		},
		OnRedial: func(err error) { lost = append(lost, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	loading = 2
	if _, err := c.Do(ctx, "QUIT"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the redial", func() bool { _, err := c.Do(ctx, "PING"); return err == nil })
	if c.Reconnects() != 1 || connects != 4 {
		t.Fatalf("reconnects %d, handshakes %d: want 1 and 4 (two answered LOADING: retried)", c.Reconnects(), connects)
	}
	// Now the handshake refuses: calls fail with the refusal, for good.
	<-refuse
	refuse <- true
	c.Do(ctx, "QUIT")
	waitUntil(t, "the refusal", func() bool { _, err := c.Do(ctx, "PING"); return errors.Is(err, ErrRefused) })
	time.Sleep(100 * time.Millisecond)
	if n := connects; n != 5 {
		t.Fatalf("%d handshakes: a refusal must end the redial loop (want 5)", n)
	}
	_, err = c.Do(ctx, "PING")
	if !errors.Is(err, ErrRefused) || errors.Is(err, ErrConnLost) {
		t.Fatalf("after the refusal: %v", err)
	}
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	await.Until(t, what, f)
}
