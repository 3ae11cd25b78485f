// Package resp is the RESP2 codec of the kit's connector: the reply value, its reader and the
// command writer. It knows nothing of connections or of EchoMQ.
package resp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/emqerr"
)

// Type is the RESP2 type byte of a reply.
type Type byte

// The five RESP2 types.
const (
	SimpleString Type = '+'
	ErrorReply   Type = '-'
	Integer      Type = ':'
	BulkString   Type = '$'
	Array        Type = '*'
)

func (t Type) String() string {
	switch t {
	case SimpleString:
		return "simple-string"
	case ErrorReply:
		return "error"
	case Integer:
		return "integer"
	case BulkString:
		return "bulk-string"
	case Array:
		return "array"
	}
	return fmt.Sprintf("type(%q)", byte(t))
}

// Value is one RESP2 reply. Str holds simple strings, error lines and bulk bytes; Int holds
// integers; Elems holds array elements. Null marks the nil bulk ($-1) and the nil array (*-1).
type Value struct {
	Type  Type
	Null  bool
	Int   int64
	Str   []byte
	Elems []Value
}

// Err returns the reply as a *ServerError when it is an error reply, else nil.
func (v Value) Err() error {
	if v.Type != ErrorReply {
		return nil
	}
	return ParseServerError(string(v.Str))
}

// Text returns the reply's bytes as a string (simple, error, bulk) or its integer in decimal.
func (v Value) Text() string {
	if v.Type == Integer {
		return strconv.FormatInt(v.Int, 10)
	}
	return string(v.Str)
}

// Int64 returns an integer reply, or a bulk/simple string that holds a decimal integer.
func (v Value) Int64() (int64, error) {
	switch v.Type {
	case Integer:
		return v.Int, nil
	case BulkString, SimpleString:
		if !v.Null {
			return strconv.ParseInt(string(v.Str), 10, 64)
		}
	}
	return 0, fmt.Errorf("resp: %s reply is not an integer", v.Type)
}

// ServerError is an error reply from the server, keyed by its first word (NOSCRIPT, WRONGTYPE,
// EMQSTALE, …). It matches the emqerr sentinels of the same type under errors.Is.
type ServerError struct {
	Kind    string
	Message string
}

func (e *ServerError) Error() string {
	if e.Message == "" {
		return e.Kind
	}
	return e.Kind + " " + e.Message
}

// Is lets errors.Is(err, emqerr.Stale) hold for a server reply "EMQSTALE …", and compares two
// ServerErrors by kind.
func (e *ServerError) Is(target error) bool {
	switch t := target.(type) {
	case *emqerr.Error:
		return string(t.Type) == e.Kind
	case *ServerError:
		return t.Kind == e.Kind && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// As lets errors.As(err, &e) with e an *emqerr.Error find a canon error reply anywhere in a
// chain, so callers never convert ServerError by hand.
func (e *ServerError) As(target any) bool {
	t, ok := target.(**emqerr.Error)
	if !ok {
		return false
	}
	me, ok := e.EMQ()
	if ok {
		*t = me
	}
	return ok
}

// EMQ converts the reply to the canon's typed error when its kind is one of the canon's.
func (e *ServerError) EMQ() (*emqerr.Error, bool) {
	if !emqerr.Known(emqerr.Type(e.Kind)) {
		return nil, false
	}
	return &emqerr.Error{Type: emqerr.Type(e.Kind), Message: e.Message}, true
}

// ParseServerError splits an error line into its kind (first word) and message.
func ParseServerError(line string) *ServerError {
	kind, msg, _ := strings.Cut(line, " ")
	return &ServerError{Kind: kind, Message: msg}
}

// Common server error kinds, as sentinels for errors.Is.
var (
	ErrNoScript  = &ServerError{Kind: "NOSCRIPT"}
	ErrWrongType = &ServerError{Kind: "WRONGTYPE"}
)

// ProtocolError is a violation of RESP2 by the peer: an unknown type byte, a bad length, a
// length over the reader's limits, nesting too deep, a missing CRLF.
type ProtocolError struct {
	Reason string
}

func (e *ProtocolError) Error() string { return "resp: protocol violation: " + e.Reason }

// ErrProtocol matches every *ProtocolError under errors.Is.
var ErrProtocol = errors.New("resp: protocol violation")

// Is makes errors.Is(err, ErrProtocol) hold.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }
