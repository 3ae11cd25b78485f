package chop

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// The relay hands every byte on, in order, cut into pieces of at most three bytes.
func TestRelayCutsRepliesAndLosesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reply := bytes.Repeat([]byte("$5\r\nhello\r\n"), 20)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		c.Write(reply)
	}()
	r, err := Start(ln.Addr().String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
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
