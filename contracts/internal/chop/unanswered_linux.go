package chop

import (
	"net"
	"syscall"
)

// noRoom makes ln's queue hold a single connection: listen(2) again on a listening socket
// only sets its backlog, and Linux's backlog 0 leaves room for one.
func noRoom(ln *net.TCPListener) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), 0) }); err != nil {
		return err
	}
	return lerr
}
