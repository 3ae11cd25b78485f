//go:build !linux

package chop

import (
	"errors"
	"net"
)

// noRoom is Linux's: elsewhere no listener stands for an unanswered server.
func noRoom(*net.TCPListener) error { return errors.ErrUnsupported }
