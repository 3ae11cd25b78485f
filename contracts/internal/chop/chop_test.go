package chop

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The relay hands every byte on, in order, cut into pieces of at most three bytes.
func TestRelayCutsRepliesAndLosesNothing(t *testing.T) {
	reply := bytes.Repeat([]byte("$5\r\nhello\r\n"), 20)
	r, got := pingThroughCut(t, reply)
	if !bytes.Equal(got, reply) {
		t.Fatalf("relayed %q, want %q", got, reply)
	}
	if p, min := r.Pieces(), int64(len(reply)/3); p < min {
		t.Fatalf("%d pieces for %d bytes, want at least %d", p, len(reply), min)
	}
	if r.Dials() != 1 {
		t.Fatalf("dials %d, want 1", r.Dials())
	}
}

// echo sends four bytes through c and reads four back.
func echo(c net.Conn) error {
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, 4))
	return err
}

// relayed starts a relay in front of an echo server and opens one connection through it, used
// once so the relay has accepted it and dialled the server (a dial returns when the kernel
// queues the connection, before the relay takes it); both close when the test ends.
func relayed(t *testing.T) (*Relay, net.Conn) {
	r, err := Start(echoServer(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	open, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { open.Close() })
	if err := echo(open); err != nil {
		t.Fatalf("the first connection through the relay: %v", err)
	}
	return r, open
}

// While refusing, a new connection is closed at once and counted; one already open keeps
// working; after it, new connections are relayed again.
func TestRefuseClosesNewConnectionsOnly(t *testing.T) {
	r, open := relayed(t)
	r.Refuse(true)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(c); err == nil {
		t.Fatal("a connection made while refusing was relayed")
	}
	c.Close()
	if err := echo(open); err != nil {
		t.Fatalf("the connection open before refusing stopped working: %v", err)
	}
	if r.Refused() != 1 {
		t.Fatalf("refused %d, want 1", r.Refused())
	}
	r.Refuse(false)
	c, err = net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("after refusing, a new connection is not relayed: %v", err)
	}
}

// While down, a new connection is refused by the kernel (ECONNREFUSED) and one already open
// keeps working; after it, new connections on the same address are relayed again.
func TestDownRefusesAtConnect(t *testing.T) {
	r, open := relayed(t)
	if err := r.Down(true); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", r.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a dial while down: %v, want ECONNREFUSED", err)
	}
	if err := echo(open); err != nil {
		t.Fatalf("the connection open before going down stopped working: %v", err)
	}
	if err := r.Down(false); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("back up, a new connection is not relayed: %v", err)
	}
}

// CutAfterFirstReply ends the next connections right after the server's first reply; the one
// after them is relayed as usual.
func TestCutAfterFirstReply(t *testing.T) {
	r, err := Start(echoServer(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.CutAfterFirstReply(1)
	round := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		_, err := io.ReadFull(c, make([]byte, 4))
		return err
	}
	for i, wantCut := range []bool{true, false} {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := round(c); err != nil {
			t.Fatalf("connection %d: the first reply did not arrive: %v", i, err)
		}
		err = round(c)
		if cut := err != nil; cut != wantCut {
			t.Fatalf("connection %d: cut after its first reply %v (%v), want %v", i, cut, err, wantCut)
		}
		c.Close()
	}
	if r.Cut() != 1 {
		t.Fatalf("cut %d, want 1", r.Cut())
	}
}

// DropAfter hands on that many more of the server's bytes, then drops every connection; the
// connections opened after it are relayed as usual, and Taken counts what the server sent.
func TestDropAfterCutsAReplyOff(t *testing.T) {
	r, open := relayed(t)
	before := r.Taken()
	r.DropAfter(6)
	if _, err := open.Write([]byte("ping, pong")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(open)
	if string(got) != "ping, " || err != nil {
		t.Fatalf("after DropAfter(6): read %q then %v, want \"ping, \" then the end", got, err)
	}
	if n := r.Taken() - before; n < 6 {
		t.Fatalf("taken %d bytes of the server's, want at least 6", n)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatalf("a connection after the drop: %v", err)
	}
}

// echoServer listens on a free loopback port and echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	return serve(t, func(c net.Conn) { io.Copy(c, c) })
}

// serve listens on a free loopback port until the test ends and hands each connection to
// handle, closing it after.
func serve(t *testing.T, handle func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	return ln.Addr().String()
}

// After Retarget a new connection reaches the new server; one already open keeps its own.
func TestRetargetMovesNewConnectionsOnly(t *testing.T) {
	r, open := relayed(t)
	// The second server answers every connection with one byte and closes it: not an echo.
	second := serve(t, func(c net.Conn) { c.Write([]byte("x")) })
	r.Retarget(second)
	if err := echo(open); err != nil {
		t.Fatalf("the open connection left its server: %v", err)
	}
	moved, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	b, err := io.ReadAll(moved)
	if err != nil || string(b) != "x" {
		t.Fatalf("a new connection read %q, %v from the relay, not the new server's x", b, err)
	}
}

// A silenced connection hands nothing on and stays open until EndSilence closes it; a new one
// is relayed.
func TestSilenceHandsNothingOn(t *testing.T) {
	r, open := relayed(t)
	if n := r.Silence(func(string) bool { return true }); n != 1 {
		t.Fatalf("Silence matched %d connections, want 1", n)
	}
	if _, err := open.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := open.Read(make([]byte, 4)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent connection read %d bytes, %v; want nothing until the deadline", n, err)
	}
	fresh, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := echo(fresh); err != nil {
		t.Fatalf("a new connection is not relayed: %v", err)
	}
	r.EndSilence()
	_ = open.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a broken relay, not a slow one
	if _, err := open.Read(make([]byte, 4)); !errors.Is(err, io.EOF) {
		t.Fatalf("after EndSilence the silent connection reads %v, want EOF", err)
	}
	if err := echo(fresh); err != nil {
		t.Fatalf("EndSilence closed a connection that was not silent: %v", err)
	}
}

// SilentGone stamps when the client closes a silent connection, and only a silent one.
func TestSilentGoneStampsTheClientsClose(t *testing.T) {
	r, open := relayed(t)
	all := func(string) bool { return true }
	r.Silence(all)
	if got := r.SilentGone(all); len(got) != 1 || !got[0].IsZero() {
		t.Fatalf("before the client closes: %v, want one zero time", got)
	}
	before := time.Now()
	open.Close()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got := r.SilentGone(all); len(got) == 1 && !got[0].IsZero() {
			if got[0].Before(before) {
				t.Fatalf("stamped %v, before the close at %v", got[0], before)
			}
			return
		}
	}
	t.Fatal("the client's close was never stamped")
}

// A half-closing connection hands the server's close on as EOF and keeps the client's side open
// until the client closes it, which ClientClosed stamps.
func TestHalfCloseStampsTheClientsClose(t *testing.T) {
	// The server closes each connection once it has read four bytes.
	r, err := Start(serve(t, func(c net.Conn) { io.ReadFull(c, make([]byte, 4)) }), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all := func(string) bool { return true }
	// A dial returns when the kernel queues the connection, before the relay takes it.
	for deadline := time.Now().Add(30 * time.Second); r.HalfClose(all) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the relay never took the connection")
		}
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a broken relay, not a slow one
	if _, err := c.Read(make([]byte, 4)); !errors.Is(err, io.EOF) {
		t.Fatalf("after the server's close the client reads %v, want EOF", err)
	}
	if got := r.ClientClosed(all); len(got) != 1 || !got[0].IsZero() {
		t.Fatalf("before the client closes: %v, want one zero time", got)
	}
	before := time.Now()
	c.Close()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got := r.ClientClosed(all); len(got) == 1 && !got[0].IsZero() {
			if got[0].Before(before) {
				t.Fatalf("stamped %v, before the close at %v", got[0], before)
			}
			return
		}
	}
	t.Fatal("the client's close was never stamped")
}

// A lagging connection hands the server's bytes on late but whole and in order, and still falls
// silent; a new one is relayed at once.
func TestLagHandsOnLate(t *testing.T) {
	r, open := relayed(t)
	const lag = 300 * time.Millisecond
	if n := r.Lag(func(string) bool { return true }, lag); n != 1 {
		t.Fatalf("Lag matched %d connections, want 1", n)
	}
	sent := time.Now()
	if _, err := open.Write([]byte("abcdefgh")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a broken relay, not a slow one
	got := make([]byte, 8)
	if _, err := io.ReadFull(open, got); err != nil || string(got) != "abcdefgh" {
		t.Fatalf("a lagging connection read %q, %v; want abcdefgh", got, err)
	}
	if took := time.Since(sent); took < lag {
		t.Fatalf("the echo came back after %v, before the lag of %v", took, lag)
	}
	fresh, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := echo(fresh); err != nil {
		t.Fatalf("a new connection is not relayed: %v", err)
	}
	r.Silence(func(string) bool { return true })
	if _, err := open.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(2 * lag))
	if n, err := open.Read(make([]byte, 4)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silenced lagging connection read %d bytes, %v; want nothing", n, err)
	}
}

// LagAll slows the connections opened after it too, and LagAll(0) hands what is still owed on
// first: bytes echoed after the lag ended come after those echoed under it, in order.
func TestLagAllSlowsNewConnectionsAndEndsInOrder(t *testing.T) {
	r, open := relayed(t)
	const lag = 300 * time.Millisecond
	r.LagAll(lag)
	fresh, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	sent := time.Now()
	if err := echo(fresh); err != nil {
		t.Fatalf("a connection opened under LagAll: %v", err)
	}
	if took := time.Since(sent); took < lag {
		t.Fatalf("a connection opened under LagAll echoed after %v, before the lag of %v", took, lag)
	}
	if _, err := open.Write([]byte("abcd")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lag / 3) // the echo reached the relay and waits its lag (an order, not a bound)
	r.LagAll(0)
	if _, err := open.Write([]byte("efgh")); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounds a broken relay, not a slow one
	got := make([]byte, 8)
	if _, err := io.ReadFull(open, got); err != nil || string(got) != "abcdefgh" {
		t.Fatalf("across the lag's end the connection read %q, %v; want abcdefgh", got, err)
	}
}

// A dial to an unanswered address waits until it gives up, however long it is given; once the
// address is closed, a dial is refused.
func TestUnansweredDropsConnects(t *testing.T) {
	u, err := StartUnanswered(time.Second)
	if errors.Is(err, ErrAnswered) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := net.DialTimeout("tcp", u.Addr(), 1500*time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			if c != nil {
				c.Close()
			}
			t.Fatalf("a dial to the unanswered address: %v, want a timeout", err)
		}
	}
	addr := u.Addr()
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a dial once closed: %v, want ECONNREFUSED", err)
	}
}

// Owed stamps a silent connection when a reply falls due on it: zero before the port sends
// anything, then the time its request reached the relay; an earlier reply the lag held and the
// silence swallowed stamps the time the server's bytes reached the relay.
func TestOwedStampsTheFirstReplyDue(t *testing.T) {
	all := func(string) bool { return true }
	r, open := relayed(t)
	r.Silence(all)
	if got := r.Owed(all); len(got) != 1 || !got[0].IsZero() {
		t.Fatalf("before a request: %v, want one zero time", got)
	}
	before := time.Now()
	if _, err := open.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got := r.Owed(all); len(got) == 1 && !got[0].IsZero() {
			if got[0].Before(before) {
				t.Fatalf("stamped %v, before the request at %v", got[0], before)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request on a silent connection was never stamped")
		}
	}

	r2, lagging := relayed(t)
	const lag = 300 * time.Millisecond
	r2.Lag(all, lag)
	sent := time.Now()
	if _, err := lagging.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lag / 3) // the echo reaches the relay, which holds it for the lag
	r2.Silence(all)
	silenced := time.Now()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got := r2.Owed(all); len(got) == 1 && !got[0].IsZero() {
			if got[0].Before(sent) || got[0].After(silenced) {
				t.Fatalf("stamped %v, want the echo's arrival, between the request at %v and the silence at %v", got[0], sent, silenced)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held reply the silence swallowed was never stamped")
		}
	}
}

// Only the first cutSpan bytes of a server read go on cut: a long burst of replies is not handed
// on a few bytes at a time all through, and loses nothing.
func TestCutSpanBoundsThePieces(t *testing.T) {
	reply := bytes.Repeat([]byte("$-1\r\n"), 1024)
	r, got := pingThroughCut(t, reply)
	if !bytes.Equal(got, reply) {
		t.Fatalf("relayed %d bytes, want the %d sent", len(got), len(reply))
	}
	// However the kernel splits the burst into reads, each read's first bytes are cut.
	if p := r.Pieces(); p < cutSpan/3 {
		t.Fatalf("%d pieces for %d bytes, want at least %d", p, len(reply), cutSpan/3)
	}
}

// cutUp cuts a read's first cutSpan bytes 1, 2, 3, … at a time, carrying the cycle on, and
// hands the rest on whole.
func TestCutUp(t *testing.T) {
	var c cutter
	b := bytes.Repeat([]byte("x"), cutSpan+100)
	pieces := cutUp(b, &c)
	if got := bytes.Join(pieces, nil); !bytes.Equal(got, b) {
		t.Fatalf("the pieces join to %d bytes, want %d", len(got), len(b))
	}
	for i, p := range pieces[:len(pieces)-1] {
		if want := i%3 + 1; len(p) != want {
			t.Fatalf("piece %d is %d bytes, want %d", i, len(p), want)
		}
	}
	if cut := len(b) - len(pieces[len(pieces)-1]); cut < cutSpan || cut > cutSpan+2 {
		t.Fatalf("%d bytes cut, want the first %d (a piece may end up to 2 past), the rest whole", cut, cutSpan)
	}
	next := cutUp([]byte("abcdef"), &c)
	if got := bytes.Join(next, nil); string(got) != "abcdef" || len(next) < 3 {
		t.Fatalf("a short read cut into %q, want all of it cut", next)
	}
}

// A long bulk's CRLF is split CR first, in whichever read it comes; CRs close together are not
// (a reply of many short lines goes on whole past the first cutSpan bytes).
func TestCutUpSplitsALongRunsCRLF(t *testing.T) {
	var c cutter
	read := append(bytes.Repeat([]byte("y"), cutSpan+1000), "\r\n:1\r\n:2\r\n"...)
	pieces := cutUp(read, &c)
	if got := bytes.Join(pieces, nil); !bytes.Equal(got, read) {
		t.Fatalf("the pieces join to %q", got)
	}
	tail := pieces[len(pieces)-2:]
	if !bytes.HasSuffix(tail[0], []byte("yyy\r")) || string(tail[1]) != "\n:1\r\n:2\r\n" {
		t.Fatalf("the last pieces %q, want the read cut after the CR that ends the long run, and no more", tail)
	}
}

// pingThroughCut sends PING through a cutting relay to a server that answers it with reply and
// closes, and returns the relay and everything the client read.
func pingThroughCut(t *testing.T, reply []byte) (*Relay, []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			return
		}
		c.Write(reply)
	}()
	r, err := Start(ln.Addr().String(), time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return r, got
}
