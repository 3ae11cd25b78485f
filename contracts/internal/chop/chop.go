// Package chop is a loopback relay between a port and its Valkey. It can hand the server's
// replies on in pieces of one to three bytes, each written on its own after a short pause: a
// port's reads then end at every byte position of a reply — inside a bulk string, between its
// last byte and its CRLF — which a port dialling Valkey directly on loopback almost never sees,
// since the server writes a small reply in one segment. And it can refuse new connections for a
// while (each accepted and closed at once, as a server at its client limit or a proxy in front
// of a restarting one does), or be down for a while (nothing listens: a new connection is
// refused by the kernel, as a stopped server's is), while the connections already open keep
// working. And it can make open connections slow (the server's bytes handed on late, in order)
// or silent (nothing handed on, nothing closed). Apart from the relay, Unanswered is an address
// whose connects nothing answers, as a server's behind a dropped route.
package chop

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Relay accepts connections and relays each to the server: what the client sends goes on
// whole, what the server answers goes back cut.
type Relay struct {
	addr    string
	target  string
	pause   time.Duration
	wg      sync.WaitGroup
	mu      sync.Mutex
	ln      net.Listener // nil while down
	legs    []*leg
	closed  bool
	pieces  atomic.Int64
	dials   atomic.Int64
	refuse  atomic.Bool
	refused atomic.Int64
	cutNext atomic.Int64
	cut     atomic.Int64
	budget  atomic.Int64 // server bytes still handed on before every connection is dropped; -1: none
	taken   atomic.Int64 // server bytes read, every connection
	lagAll  atomic.Int64 // ns: the lag LagAll gives every connection, new ones too; 0: none
}

// leg is one relayed connection: the client's side and the relay's connection to the server.
// A silent leg still reads both sides but hands nothing on, and closes nothing. A lagging leg
// hands the server's bytes on lag after they arrived, in order, through late.
type leg struct {
	client, server net.Conn
	silent         atomic.Bool
	clientGone     atomic.Int64 // unix ns when the client side ended while silent; 0 before
	halfClose      atomic.Bool  // the server's close goes on as a FIN only (HalfClose)
	clientEnd      atomic.Int64 // unix ns when the client side ended; 0 before
	owed           atomic.Int64 // unix ns when a reply first fell due on it while silent; 0 before
	lag            atomic.Int64 // ns; 0: the server's bytes go on as they come
	lagged         atomic.Bool  // lag was set once: the server's bytes go through late for good
	late           chan lateBytes
}

// lateBytes are the server's bytes a lagging leg hands on at due; they reached the relay at got.
type lateBytes struct {
	got, due time.Time
	b        []byte
}

// cutSpan is how much of each read from the server goes on cut: the rest of the read goes on
// whole. Every cut position of the replies in it falls in that span (replies to a pipeline
// repeat, and the clause's replies are short), and cutting all of it cost minutes on a busy
// machine when a port's hello pipelined a thousand reads (5 KiB of replies, 2,500 pieces).
const cutSpan = 512

// Start listens on a free port of the IPv4 loopback and relays to target (host:port). With
// pause > 0 the server's bytes go back cut, pause apart; with 0 they go back as they come.
func Start(target string, pause time.Duration) (*Relay, error) {
	return StartOn("127.0.0.1", target, pause)
}

// StartOn is Start listening on the loopback address host ("::1" puts the relay on the IPv6
// loopback, so its Addr is a bracketed literal).
func StartOn(host, target string, pause time.Duration) (*Relay, error) {
	ln, err := listen(host)
	if err != nil {
		return nil, fmt.Errorf("chop: listen: %w", err)
	}
	r := &Relay{addr: ln.Addr().String(), ln: ln, target: target, pause: pause}
	r.budget.Store(-1)
	r.wg.Add(1)
	go r.accept(ln)
	return r, nil
}

// listen takes a free loopback port below the kernel's ephemeral range when it can: Down(false)
// listens on the same port again, and a port in that range may meanwhile be taken as the local
// end of some process's outgoing connection, which only an explicit bind can do below it.
func listen(host string) (net.Listener, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	for range 64 {
		if lo <= 10001 {
			break
		}
		if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(10000+rand.IntN(lo-10000)))); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// Addr is the address a port is given instead of the server's.
func (r *Relay) Addr() string { return r.addr }

// Down stops listening (on), so that a new connection is refused by the kernel (ECONNREFUSED)
// as a stopped server's is, or listens on the same address again (off). The connections
// already open keep working.
func (r *Relay) Down(on bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return errors.New("chop: the relay is closed")
	case on && r.ln != nil:
		err := r.ln.Close()
		r.ln = nil
		return err
	case !on && r.ln == nil:
		ln, err := net.Listen("tcp", r.addr)
		if err != nil {
			return fmt.Errorf("chop: listen on %s again: %w", r.addr, err)
		}
		r.ln = ln
		r.wg.Add(1)
		go r.accept(ln)
	}
	return nil
}

// Pieces is how many separate writes carried the server's replies so far.
func (r *Relay) Pieces() int64 { return r.pieces.Load() }

// Dials is how many connections the relay opened to the server.
func (r *Relay) Dials() int64 { return r.dials.Load() }

// CutAfterFirstReply makes the next n connections end right after the server's first reply
// reaches the client (a connection that dies during its own handshake, HELLO answered).
func (r *Relay) CutAfterFirstReply(n int64) { r.cutNext.Store(n) }

// DropAfter makes the relay hand on n more bytes of the server's (over every connection, in the
// order it reads them), then drop every connection, both its ends, as a server that drops its
// clients at that byte does: a reply is cut off at any byte position wanted. New connections,
// the drop's redials, are relayed as before; a DropAfter not yet spent is replaced, and n < 0
// disarms it.
func (r *Relay) DropAfter(n int64) { r.budget.Store(max(n, -1)) }

// Taken is how many bytes the relay has read from the server, over every connection.
func (r *Relay) Taken() int64 { return r.taken.Load() }

// spend takes up to n bytes of DropAfter's budget: k may go on, and drop says the budget is
// spent (and disarmed), so the connections are to be dropped once the k are written.
func (r *Relay) spend(n int) (k int, drop bool) {
	for {
		v := r.budget.Load()
		if v < 0 {
			return n, false
		}
		k = int(min(int64(n), v))
		left := v - int64(k)
		if left == 0 {
			left = -1
		}
		if r.budget.CompareAndSwap(v, left) {
			return k, left < 0
		}
	}
}

// takeCut spends one of CutAfterFirstReply's connections, if any is left.
func (r *Relay) takeCut() bool {
	for {
		n := r.cutNext.Load()
		if n <= 0 {
			return false
		}
		if r.cutNext.CompareAndSwap(n, n-1) {
			r.cut.Add(1)
			return true
		}
	}
}

// Cut is how many connections were ended after their first reply.
func (r *Relay) Cut() int64 { return r.cut.Load() }

// firstReplyOnly hands on the server's first read, then closes both sides.
func (r *Relay) firstReplyOnly(dst, src net.Conn) {
	defer r.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	if n, _ := src.Read(buf); n > 0 {
		_, _ = dst.Write(buf[:n])
	}
}

// Retarget relays every new connection to addr from now on (a failover onto another server);
// the connections already open stay with the server they reached.
func (r *Relay) Retarget(addr string) {
	r.mu.Lock()
	r.target = addr
	r.mu.Unlock()
}

// Drop closes every connection open through the relay, both its ends, as a server that drops
// its clients does; new connections are relayed as before. It needs nothing of the server, so
// it drops a port's connections while the server answers no CLIENT KILL (busy running a script).
func (r *Relay) Drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.legs {
		l.client.Close()
		l.server.Close()
	}
}

// Refuse makes the relay close every new connection at once (on) or relay it again (off).
func (r *Relay) Refuse(on bool) { r.refuse.Store(on) }

// Refused is how many connections were closed at once while refusing.
func (r *Relay) Refused() int64 { return r.refused.Load() }

// Close stops accepting, closes every relayed connection and waits for the relay to finish.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for _, l := range r.legs {
		l.client.Close()
		l.server.Close()
	}
	var err error
	if r.ln != nil {
		err = r.ln.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// track remembers l for Close and Silence; false when the relay is already closed (l's
// connections are closed then).
func (r *Relay) track(l *leg) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		l.client.Close()
		l.server.Close()
		return false
	}
	r.legs = append(r.legs, l)
	return true
}

// Silence makes every open connection whose end at the server (the address the server's CLIENT
// LIST shows) match fall silent, as a stopped server or a dropped route would: nothing more is
// handed on either way, and no socket is closed. New connections are relayed as before. It
// returns how many fell silent.
func (r *Relay) Silence(match func(serverSide string) bool) int {
	return r.each(match, func(l *leg) { l.silent.Store(true) })
}

// Lag makes every open connection whose end at the server matches slow, as a loaded server or a
// congested route would: from now on the server's bytes reach the client d after they reached
// the relay, in order, and nothing is lost or closed (Silence still stops them). New
// connections are relayed as before. It returns how many lag.
func (r *Relay) Lag(match func(serverSide string) bool, d time.Duration) int {
	return r.each(match, func(l *leg) { l.setLag(d) })
}

// LagAll makes every connection slow by d, as Lag does, and every connection opened from now
// on too: a port that replaces a slow connection finds the new one as slow. LagAll(0) ends
// it; the bytes still owed are handed on first, in order.
func (r *Relay) LagAll(d time.Duration) int {
	r.lagAll.Store(int64(d))
	return r.each(func(string) bool { return true }, func(l *leg) { l.setLag(d) })
}

func (l *leg) setLag(d time.Duration) {
	l.lagged.Store(true)
	l.lag.Store(int64(d))
}

// Owed says, for each silent connection whose end at the server match names, when a reply first
// fell due on it while silent: the port sent a request the silence swallowed, or the server
// answered one (its reply, held by a lag or arriving after the silence began, was swallowed).
// The zero time while none has.
func (r *Relay) Owed(match func(serverSide string) bool) []time.Time {
	return r.stamps(match, func(l *leg) (bool, int64) { return l.silent.Load(), l.owed.Load() })
}

// SilentGone says, for each silent connection whose end at the server match names, when its
// client closed it (the zero time while it is open).
func (r *Relay) SilentGone(match func(serverSide string) bool) []time.Time {
	return r.stamps(match, func(l *leg) (bool, int64) { return l.silent.Load(), l.clientGone.Load() })
}

// HalfClose makes every open connection whose end at the server match names hand the server's
// close on as a FIN only (the relay's write side to the client), and keep reading the client,
// dropping what it sends, until the client closes its side, so that ClientClosed tells when the
// client took the loss in. The client sees the close as before. It returns how many it marked.
func (r *Relay) HalfClose(match func(serverSide string) bool) int {
	return r.each(match, func(l *leg) { l.halfClose.Store(true) })
}

// ClientClosed says, for each connection HalfClose marked whose end at the server match names,
// when its client closed it (the zero time while it is open).
func (r *Relay) ClientClosed(match func(serverSide string) bool) []time.Time {
	return r.stamps(match, func(l *leg) (bool, int64) { return l.halfClose.Load(), l.clientEnd.Load() })
}

// EndSilence closes the silent connections, as the server's side does once the route is back.
func (r *Relay) EndSilence() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.legs {
		if l.silent.Load() {
			l.client.Close()
			l.server.Close()
		}
	}
}

func (r *Relay) accept(ln net.Listener) {
	defer r.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return // closed (Close, or Down)
		}
		if r.refuse.Load() {
			r.refused.Add(1) // counted before the close the client sees
			client.Close()
			continue
		}
		r.mu.Lock()
		target := r.target
		r.mu.Unlock()
		server, err := net.Dial("tcp", target)
		if err != nil {
			client.Close() // the port sees the server unreachable, as it would without the relay
			continue
		}
		r.dials.Add(1)
		l := &leg{client: client, server: server, late: make(chan lateBytes, 4096)}
		if d := time.Duration(r.lagAll.Load()); d > 0 {
			l.setLag(d)
		}
		if !r.track(l) {
			return
		}
		r.wg.Add(2)
		go r.pipe(server, client, false, l)
		if r.takeCut() {
			go r.firstReplyOnly(client, server)
		} else {
			r.wg.Add(1)
			go r.handLate(client, l)
			go r.pipe(client, server, r.pause > 0, l)
		}
	}
}

// handLate writes a lagging leg's late bytes to dst, each at its due time, until the server's
// side ends; a silent leg's are dropped.
func (r *Relay) handLate(dst net.Conn, l *leg) {
	defer r.wg.Done()
	for lb := range l.late {
		time.Sleep(time.Until(lb.due))
		if !l.silent.Load() {
			_, _ = dst.Write(lb.b) // a failed write ends the pipe too; the rest is drained
		} else {
			l.oweSince(lb.got)
		}
	}
}

// pipe copies src to dst until either side closes; cut hands the bytes on in small pieces, a
// silent leg none, a lagging leg the server's late (handLate). The client's end of a silent
// leg is stamped.
func (r *Relay) pipe(dst, src net.Conn, cut bool, l *leg) {
	defer r.wg.Done()
	fromServer := src == l.server
	defer func() {
		src.Close()
		if tc, ok := dst.(*net.TCPConn); ok && fromServer && l.halfClose.Load() {
			tc.CloseWrite() // a FIN only: the client's own close ends the other direction
			return
		}
		dst.Close()
	}()
	if fromServer {
		defer close(l.late)
	}
	silent := &l.silent
	buf := make([]byte, 64<<10)
	var cuts cutter
	for {
		n, err := src.Read(buf)
		b := buf[:n]
		if silent.Load() {
			if n > 0 {
				l.oweSince(time.Now())
			}
			b = nil
		}
		if fromServer && len(b) > 0 {
			r.taken.Add(int64(len(b)))
			if k, drop := r.spend(len(b)); drop {
				_, _ = dst.Write(b[:k])
				r.Drop()
				return
			}
		}
		// Once lagged, a leg's bytes queue behind the late ones even when its lag is back to 0.
		if lag := time.Duration(l.lag.Load()); fromServer && l.lagged.Load() && len(b) > 0 {
			now := time.Now()
			l.late <- lateBytes{now, now.Add(lag), slices.Clone(b)}
			b = nil
		}
		if !cut && len(b) > 0 {
			if _, werr := dst.Write(b); werr != nil && (fromServer || !l.halfClose.Load()) {
				return
			}
			b = nil
		}
		for _, piece := range cutUp(b, &cuts) {
			if _, werr := dst.Write(piece); werr != nil {
				return
			}
			r.pieces.Add(1)
			time.Sleep(r.pause)
		}
		if err != nil {
			if src == l.client && silent.Load() {
				l.clientGone.CompareAndSwap(0, time.Now().UnixNano())
			}
			if src == l.client {
				l.clientEnd.CompareAndSwap(0, time.Now().UnixNano())
			}
			return // EOF or closed: the deferred closes end the other direction too
		}
	}
}

// cutUp splits one read from the server into the pieces the relay writes: its first cutSpan
// bytes 1, 2, 3, 1, … bytes at a time (size carries the cycle on from the read before, so every
// cut position comes up over a few replies), the rest whole but for one cut: after a CR that
// ends a run of at least cutSpan bytes without one (run carries the run's length across reads),
// so a bulk longer than any read buffer reaches the port with its CRLF split, CR first.
func cutUp(b []byte, c *cutter) [][]byte {
	var out [][]byte
	for span := cutSpan; len(b) > 0 && span > 0; {
		c.size = c.size%3 + 1
		k := min(c.size, len(b))
		out = append(out, b[:k])
		c.note(b[:k])
		b, span = b[k:], span-k
	}
	for len(b) > 0 {
		k := len(b)
		for i, ch := range b {
			if ch == '\r' && c.run+i >= cutSpan {
				k = i + 1
				break
			}
		}
		out = append(out, b[:k])
		c.note(b[:k])
		b = b[k:]
	}
	return out
}

// cutter is what cutUp carries from one read to the next.
type cutter struct {
	size int // the last piece's size in the 1, 2, 3 cycle
	run  int // bytes since the last CR
}

// note counts piece into the run since the last CR.
func (c *cutter) note(piece []byte) {
	if i := bytes.LastIndexByte(piece, '\r'); i >= 0 {
		c.run = len(piece) - i - 1
		return
	}
	c.run += len(piece)
}

// oweSince stamps at on l as the time a reply fell due while silent, unless an earlier one is
// there.
func (l *leg) oweSince(at time.Time) {
	ns := at.UnixNano()
	for {
		old := l.owed.Load()
		if old != 0 && old <= ns || l.owed.CompareAndSwap(old, ns) {
			return
		}
	}
}

// each applies set to every open connection whose end at the server match names, and returns
// how many it found.
func (r *Relay) each(match func(serverSide string) bool, set func(*leg)) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.legs {
		if match(l.server.LocalAddr().String()) {
			set(l)
			n++
		}
	}
	return n
}

// stamps lists, for each connection whose end at the server match names and that pick marks,
// the time pick stamped on it in unix ns (the zero time while it has none).
func (r *Relay) stamps(match func(serverSide string) bool, pick func(*leg) (marked bool, ns int64)) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, l := range r.legs {
		marked, ns := pick(l)
		if !marked || !match(l.server.LocalAddr().String()) {
			continue
		}
		var at time.Time
		if ns != 0 {
			at = time.Unix(0, ns)
		}
		out = append(out, at)
	}
	return out
}
