// Package emqerr holds the canon's typed errors (CANON.md §4): the error type is the first
// word of a RESP error reply, and callers branch on it with errors.Is / errors.As instead of
// matching strings.
package emqerr

import "strings"

// Type is the first word of an EchoMQ error, e.g. "EMQSTALE".
type Type string

// The canon's error types.
const (
	TypeStale   Type = "EMQSTALE"   // fencing token or lease no longer valid
	TypeVersion Type = "EMQVERSION" // bundle version/digest mismatch at the fence
	TypeServer  Type = "EMQSERVER"  // wrong-kind or too-old server
	TypeKind    Type = "EMQKIND"    // an id of another brand where a JOB id is required
	TypeKey     Type = "EMQKEY"     // a name or id outside the closed key grammar
	TypeArg     Type = "EMQARG"     // a script argument out of range or malformed
)

// Error is an EchoMQ error, whether a script answered it or a client-side check (the key
// builder, the fence) raised it before any byte reached the server.
type Error struct {
	Type    Type
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Type)
	}
	return string(e.Type) + " " + e.Message
}

// Is makes the sentinels below match any error of the same type, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Type == e.Type && (t.Message == "" || t.Message == e.Message)
}

// ReplyKind is the first word of the error replies e matches: a *resp.ServerError "EMQSTALE …"
// is errors.Is emqerr.Stale through it (resp.ReplyTyped).
func (e *Error) ReplyKind() string {
	if e == nil {
		return ""
	}
	return string(e.Type)
}

// FromReply converts an error reply to the canon's typed error when its kind is a canon type:
// errors.As(err, &e) with e an *Error finds a canon reply anywhere in a chain through it.
// Called on a nil *Error.
func (*Error) FromReply(kind, message string) (error, bool) {
	if !Known(Type(kind)) {
		return nil, false
	}
	return &Error{Type: Type(kind), Message: message}, true
}

// Sentinels for errors.Is.
var (
	Stale   = &Error{Type: TypeStale}
	Version = &Error{Type: TypeVersion}
	Server  = &Error{Type: TypeServer}
	Kind    = &Error{Type: TypeKind}
	Key     = &Error{Type: TypeKey}
	Arg     = &Error{Type: TypeArg}
)

// New returns an error of type t.
func New(t Type, format string) *Error { return &Error{Type: t, Message: format} }

// Known reports whether t is one of the canon's types.
func Known(t Type) bool {
	switch t {
	case TypeStale, TypeVersion, TypeServer, TypeKind, TypeKey, TypeArg:
		return true
	}
	return false
}

// Parse splits an error line "TYPE message" into an *Error when its first word is a canon type.
func Parse(line string) (*Error, bool) {
	word, msg, _ := strings.Cut(line, " ")
	if !Known(Type(word)) {
		return nil, false
	}
	return &Error{Type: Type(word), Message: msg}, true
}
