package connector

import (
	"errors"
	"fmt"
)

var (
	// ErrFatal matches every *FatalError: the connection is poisoned until Reconnect.
	ErrFatal = errors.New("connector: connection poisoned")
	// ErrClosed is the cause of the FatalError every call returns after Close.
	ErrClosed = errors.New("connector: connection closed")
	// ErrHello marks a server that refused HELLO 2 or answered it in a shape we cannot read
	// (a very old or foreign server); the fence classifies it as EMQSERVER.
	ErrHello = errors.New("connector: HELLO 2 refused")
	// ErrScriptSHA matches a *ScriptSHAError.
	ErrScriptSHA = errors.New("connector: SCRIPT LOAD returned an unexpected SHA1")
	// ErrDeadline is the cause when a blocking command's read deadline (its timeout plus
	// Options.BlockSlack) passes without a reply.
	ErrDeadline = errors.New("connector: blocking command got no reply by its deadline")
	// ErrConnLost matches every *FatalError but the one of a closed Conn: the call failed on a
	// lost socket and may be retried (a Conn with Redial replaces the socket by itself).
	ErrConnLost = errors.New("connector: connection lost")
	// ErrRefused matches a connect refused by the server's HELLO or by OnConnect (the fence):
	// final, never retried.
	ErrRefused = errors.New("connector: connection refused")
	// ErrUnhealthy is the cause when a health check went unanswered: the socket looked open,
	// yet no reply came back within Options.HealthTimeout (a frozen path, a dead peer).
	ErrUnhealthy = errors.New("connector: connection unhealthy")
	// ErrUnsolicited is the cause when the server sends bytes no command asked for.
	ErrUnsolicited = errors.New("connector: reply with no command waiting")
)

// FatalError poisons a connection: after a protocol violation or an I/O failure the reply
// stream can no longer be trusted, so every later call returns the same *FatalError rather
// than read garbage. Reconnect clears it.
type FatalError struct {
	Op  string // "read", "write", "dial", "close", "reconnect", …
	Err error
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("connector: connection poisoned (%s): %v", e.Op, e.Err)
}

func (e *FatalError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFatal) hold, and errors.Is(err, ErrConnLost) unless the Conn was
// closed.
func (e *FatalError) Is(target error) bool {
	return target == ErrFatal || (target == ErrConnLost && !errors.Is(e.Err, ErrClosed))
}

// refusal wraps a connect refused by HELLO or OnConnect: errors.Is(err, ErrRefused).
type refusal struct{ err error }

func (r *refusal) Error() string        { return r.err.Error() }
func (r *refusal) Unwrap() error        { return r.err }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

// ScriptSHAError is a SCRIPT LOAD whose returned digest is not the script's own: the server
// hashes differently or the source was altered on the way, and running it would be unsafe.
type ScriptSHAError struct {
	Name, Want, Got string
}

func (e *ScriptSHAError) Error() string {
	return fmt.Sprintf("connector: script %s: SCRIPT LOAD returned %s, want %s", e.Name, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrScriptSHA) hold.
func (e *ScriptSHAError) Is(target error) bool { return target == ErrScriptSHA }
