package faults

import (
	"net"
	"sync"
	"time"
)

// proxy is a loopback TCP proxy between the bus and Valkey that strikes the drills' network
// faults:
//
//   - hold: nothing is forwarded either way (the bytes wait in the kernel, as packets a dropped
//     route would retransmit) until release; hold returns only once no chunk is being written,
//     so the server then sees nothing more from the bus — the instant a fault strikes.
//   - freeze: every connection open now forwards nothing, ever, and is left open; new ones pass.
//   - reset: every connection open now is closed on both sides.
//   - mute: new connections are accepted and never answered (nor forwarded), until unmuted.
//   - deafen: every connection open now forwards n more bytes from the bus and then is never
//     read again (a peer that stops reading mid-write); its replies still flow. The first one
//     to stop is reported (deafened), the instant that fault strikes; the others are then
//     spared (read as before).
//
// Connections a fault left behind (frozen, deafened, muted) are its own: leftOpen, after the
// drill, reads them to their end to see whether the bus closed its side.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	muted   bool
	writing int // chunks being written now; hold waits for none
	links   []*link
	onDeaf  func() // told once when the first deafened connection stops being read
	// deafBudget is what a connection opened while onDeaf waits gets to be read (a bus that
	// replaced its connection meanwhile writes on the new one): the fault strikes there too.
	deafBudget int64
	closed     bool
}

// link is one proxied connection. server is nil for a muted one.
type link struct {
	client, server net.Conn
	frozen         bool  // nothing forwarded, either way
	budget         int64 // bus-to-server bytes still forwarded before it is never read again; -1: no limit
	faulted        bool  // frozen, deafened or muted: the fault's own, ended by leftOpen
	drain          bool  // leftOpen: read and discard to the end
	gone           bool  // both sides closed
}

// chunk is the most one read takes.
const chunk = 32 << 10

// windowBytes caps the proxy's receive window towards the bus, so that a large write by the
// bus really blocks when the proxy stops reading (the kernel would otherwise buffer tens of MB).
const windowBytes = 256 << 10

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// hold stops all forwarding and returns once no chunk is in the middle of being written.
func (p *proxy) hold() {
	p.mu.Lock()
	p.held = true
	for p.writing > 0 {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

func (p *proxy) release() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// deafState says, for a drill whose deafen never struck, how far it got: the connections
// armed, and the most bytes one of them has read from the bus since.
func (p *proxy) deafState() (armed int, most int64) {
	p.each(func(l *link) {
		if l.budget >= 0 && l.faulted {
			armed++
			most = max(most, p.deafBudget-l.budget)
		}
	})
	return armed, most
}

// each applies f to every connection still open, under the lock.
func (p *proxy) each(f func(l *link)) {
	p.mu.Lock()
	for _, l := range p.links {
		if !l.gone {
			f(l)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *proxy) freeze() { p.each(func(l *link) { l.frozen, l.faulted = true, true }) }

// deafen arms every open connection to stop being read after n more bytes from the bus;
// stopped runs once, when the first of them stops.
func (p *proxy) deafen(n int64, stopped func()) {
	p.mu.Lock()
	p.onDeaf, p.deafBudget = stopped, n
	p.mu.Unlock()
	p.each(func(l *link) { l.budget, l.faulted = n, true })
}

func (p *proxy) reset() { p.each(func(l *link) { p.endLocked(l) }) }

func (p *proxy) mute(on bool) { p.mu.Lock(); p.muted = on; p.mu.Unlock() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(windowBytes)
		}
		l := &link{client: c, budget: -1}
		p.mu.Lock()
		muted := p.muted
		p.mu.Unlock()
		if muted {
			l.frozen, l.faulted = true, true // accepted, never answered
		} else if l.server, err = net.Dial("tcp", p.target); err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.end(l)
			return
		}
		if p.onDeaf != nil {
			l.budget, l.faulted = p.deafBudget, true
		}
		p.links = append(p.links, l)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(l, true)
		if l.server != nil {
			p.wg.Add(1)
			go p.pipe(l, false)
		}
	}
}

// pipe copies one direction of l (up: bus to server) as the faults allow.
func (p *proxy) pipe(l *link, up bool) {
	defer p.wg.Done()
	src, dst := l.client, l.server
	if !up {
		src, dst = l.server, l.client
	}
	buf := make([]byte, chunk)
	for {
		n, ok := p.readable(l, up)
		if !ok {
			return
		}
		n, err := src.Read(buf[:n])
		write, deaf, ok := p.forward(l, up, n)
		if !ok {
			return
		}
		if write {
			_, werr := dst.Write(buf[:n])
			p.mu.Lock()
			p.writing--
			p.cond.Broadcast()
			p.mu.Unlock()
			if werr != nil {
				p.end(l)
				return
			}
		}
		if deaf != nil {
			go deaf() // this chunk was l's last to pass
		}
		if err != nil {
			p.end(l)
			return
		}
	}
}

// readable waits until src may be read (a deafened link's bus side never again, unless
// drained) and says how much at most; false once the proxy closed.
func (p *proxy) readable(l *link, up bool) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for up && l.budget == 0 && !l.drain && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return 0, false
	}
	if up && l.budget > 0 && !l.drain {
		return int(min(l.budget, chunk)), true
	}
	return chunk, true
}

// forward decides what becomes of n bytes just read: written (counted in writing), or dropped
// while l is drained. It waits while the proxy is held or l frozen; ok is false once the proxy
// closed. deaf is the deafen report to make, when these are l's last bytes to pass.
func (p *proxy) forward(l *link, up bool, n int) (write bool, deaf func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up && l.budget > 0 {
		if l.budget = max(0, l.budget-int64(n)); l.budget == 0 && p.onDeaf != nil {
			deaf, p.onDeaf = p.onDeaf, nil
			p.spareOthers(l)
		}
	}
	for !p.closed && !l.drain && (p.held || l.frozen) {
		p.cond.Wait()
	}
	switch {
	case p.closed:
		return false, deaf, false
	case l.drain || n == 0:
		return false, deaf, true
	}
	p.writing++
	return true, deaf, true
}

// spareOthers disarms every connection but deaf, the first to stop being read: the fault has
// struck, and another connection going deaf later (after the leases were read at the strike)
// would be a second fault the drill never recorded.
func (p *proxy) spareOthers(deaf *link) {
	for _, o := range p.links {
		if o != deaf && o.budget > 0 {
			o.budget, o.faulted = -1, false
		}
	}
}

func (p *proxy) end(l *link) {
	p.mu.Lock()
	p.endLocked(l)
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *proxy) endLocked(l *link) {
	if l.gone {
		return
	}
	l.gone = true
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

// leftOpen reads every connection a fault left behind to its end, discarding what comes, and
// returns how many the bus had not closed within timeout. Those it finds closed are closed on
// the server's side too, so the server's client list shows what the bus still holds.
func (p *proxy) leftOpen(timeout time.Duration) int {
	p.each(func(l *link) {
		if l.faulted {
			l.drain = true
		}
	})
	for end := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		open := 0
		p.mu.Lock()
		for _, l := range p.links {
			if l.faulted && !l.gone {
				open++
			}
		}
		p.mu.Unlock()
		if open == 0 || time.Now().After(end) {
			return open
		}
	}
}

// close ends the proxy and every connection through it, and waits for its goroutines.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, l := range p.links {
		p.endLocked(l)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
