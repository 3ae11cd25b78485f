// Package resp is the RESP2 codec of the kit's connector: the reply value, its reader and the
// command writer. It knows nothing of connections or of EchoMQ.
package resp

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
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
// EMQSTALE, …). Under errors.Is and errors.As it matches any ReplyTyped error of its kind.
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

// ReplyTyped is a typed error an error reply converts to (an application's own error type):
// errors.Is and errors.As see through a *ServerError to it, while this package knows nothing of
// the type. Its methods must work on the type's zero value (a nil pointer).
type ReplyTyped interface {
	error
	// ReplyKind is the first word of the replies the (sentinel) error matches.
	ReplyKind() string
	// FromReply builds the typed error of a reply, or false when kind is not one of its own.
	FromReply(kind, message string) (error, bool)
}

// Is lets errors.Is(err, sentinel) hold for a reply of the sentinel's kind (a ReplyTyped),
// and compares two ServerErrors by kind.
func (e *ServerError) Is(target error) bool {
	switch t := target.(type) {
	case *ServerError:
		return t.Kind == e.Kind && (t.Message == "" || t.Message == e.Message)
	case ReplyTyped:
		return t.ReplyKind() == e.Kind
	}
	return false
}

// As lets errors.As(err, &e) with e of a ReplyTyped type find a reply of that type anywhere in
// a chain, so callers never convert ServerError by hand.
func (e *ServerError) As(target any) bool {
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	dst := rv.Elem()
	rt, ok := reflect.Zero(dst.Type()).Interface().(ReplyTyped)
	if !ok {
		return false
	}
	typed, ok := rt.FromReply(e.Kind, e.Message)
	if !ok || typed == nil {
		return false
	}
	tv := reflect.ValueOf(typed)
	if !tv.Type().AssignableTo(dst.Type()) {
		return false
	}
	dst.Set(tv)
	return true
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
