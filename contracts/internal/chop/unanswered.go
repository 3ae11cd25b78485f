package chop

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrAnswered says that this machine's kernel completed a connect to a listener with no room in
// its queue, so it cannot stand for a server whose connects go unanswered.
var ErrAnswered = errors.New("chop: the kernel completes connects to a listener that has no room for them")

// Unanswered is an address on the IPv4 loopback whose connects nothing answers, as a server
// behind a dropped route: a listener with no room in its queue (backlog 0, its one place taken
// by a connection of the kit's own that it never accepts), so that the kernel drops every new
// SYN and a dial waits until it gives up.
type Unanswered struct {
	ln   net.Listener
	held []net.Conn
}

// StartUnanswered listens and fills the queue. A dial that probe does not see completed proves
// the address unanswered; ErrAnswered when four complete (their kernel makes room for them).
func StartUnanswered(probe time.Duration) (*Unanswered, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chop: listen: %w", err)
	}
	u := &Unanswered{ln: ln}
	if err := noRoom(ln.(*net.TCPListener)); err != nil {
		u.Close()
		return nil, fmt.Errorf("chop: %w: %w", ErrAnswered, err)
	}
	for range 4 {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), probe)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return u, nil // the SYN was dropped, and its retry too
		case err != nil:
			u.Close()
			return nil, fmt.Errorf("chop: dial the unanswered listener: %w", err)
		}
		u.held = append(u.held, c)
	}
	u.Close()
	return nil, ErrAnswered
}

// Addr is the address whose connects go unanswered.
func (u *Unanswered) Addr() string { return u.ln.Addr().String() }

// Close stops listening (a connect still waiting is then refused) and closes the held
// connections.
func (u *Unanswered) Close() error {
	for _, c := range u.held {
		c.Close()
	}
	return u.ln.Close()
}
