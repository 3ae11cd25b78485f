// Package keys is the closed key grammar of CANON.md §2: a builder that refuses any name or id
// outside the grammar before a byte reaches the server, a total parser, and the cluster slot.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

// MaxName is the longest queue or lane name, in bytes.
const MaxName = 64

// Kind names a key's row in the grammar.
type Kind string

// The grammar's key kinds.
const (
	KindPending   Kind = "pending"
	KindActive    Kind = "active"
	KindScheduled Kind = "scheduled"
	KindDead      Kind = "dead"
	KindErrors    Kind = "errors"
	KindCkpt      Kind = "ckpt"
	KindMeta      Kind = "meta"
	KindWake      Kind = "wake"
	KindRing      Kind = "ring"
	KindLanes     Kind = "lanes"
	KindLaneOf    Kind = "laneof"
	KindJob       Kind = "job"
	KindLane      Kind = "lane"
	KindBundle    Kind = "bundle"
	KindMinter    Kind = "minter"
)

// queueKinds are the fixed per-queue suffixes (no parameter).
var queueKinds = []Kind{KindPending, KindActive, KindScheduled, KindDead, KindErrors, KindCkpt,
	KindMeta, KindWake, KindRing, KindLanes, KindLaneOf}

// QueueKinds lists the per-queue kinds without a parameter, in the canon's table order.
func QueueKinds() []Kind { return append([]Kind(nil), queueKinds...) }

const (
	bundleKey    = "{emq}:bundle"
	minterPrefix = "{emq}:minter:"
)

// Q is a validated queue name; its methods build that queue's keys.
type Q struct{ name string }

// Queue validates q (1–64 bytes of [a-z0-9_.-]) and returns its key builder. Anything else is
// EMQKEY.
func Queue(q string) (Q, error) {
	if err := checkName("queue", q); err != nil {
		return Q{}, err
	}
	return Q{name: q}, nil
}

// ValidName reports whether s is a valid queue or lane name.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func checkName(what, s string) error {
	if !ValidName(s) {
		return &emqerr.Error{Type: emqerr.TypeKey,
			Message: fmt.Sprintf("%s name %q: want 1-%d bytes of [a-z0-9_.-]", what, s, MaxName)}
	}
	return nil
}

// Name is the queue name.
func (q Q) Name() string { return q.name }

// Prefix is "emq:{q}:", the head every key of the queue shares (and the one scripts derive).
func (q Q) Prefix() string { return "emq:{" + q.name + "}:" }

// Key returns the key of a parameterless per-queue kind (pending, active, …, laneof).
func (q Q) Key(k Kind) (string, error) {
	for _, qk := range queueKinds {
		if qk == k {
			return q.Prefix() + string(k), nil
		}
	}
	return "", fmt.Errorf("keys: kind %q takes a parameter or is not a queue key", k)
}

// The per-queue keys of the canon's table, one method each.

func (q Q) Pending() string   { return q.Prefix() + string(KindPending) }
func (q Q) Active() string    { return q.Prefix() + string(KindActive) }
func (q Q) Scheduled() string { return q.Prefix() + string(KindScheduled) }
func (q Q) Dead() string      { return q.Prefix() + string(KindDead) }
func (q Q) Errors() string    { return q.Prefix() + string(KindErrors) }
func (q Q) Ckpt() string      { return q.Prefix() + string(KindCkpt) }
func (q Q) Meta() string      { return q.Prefix() + string(KindMeta) }
func (q Q) Wake() string      { return q.Prefix() + string(KindWake) }
func (q Q) Ring() string      { return q.Prefix() + string(KindRing) }
func (q Q) Lanes() string     { return q.Prefix() + string(KindLanes) }
func (q Q) LaneOf() string    { return q.Prefix() + string(KindLaneOf) }

// Job returns the row key of a JOB id. Another brand is EMQKIND; a malformed id is EMQKEY.
func (q Q) Job(id string) (string, error) {
	if _, err := ids.ParseJob(id); err != nil {
		return "", err
	}
	return q.Prefix() + "job:" + id, nil
}

// Lane returns the key of lane g (same alphabet and length as a queue name), else EMQKEY.
func (q Q) Lane(g string) (string, error) {
	if err := checkName("lane", g); err != nil {
		return "", err
	}
	return q.Prefix() + "lane:" + g, nil
}

// Bundle is the deployment's bundle fence key.
func Bundle() string { return bundleKey }

// Minter is the lease key of minter worker id w, 0–1023; else EMQKEY.
func Minter(w int) (string, error) {
	if w < 0 || w > ids.MaxWorker {
		return "", &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("minter worker %d outside 0-%d", w, ids.MaxWorker)}
	}
	return minterPrefix + strconv.Itoa(w), nil
}

// Parsed is a key read back into the grammar. Queue is set for every per-queue kind, ID for job,
// Lane for lane and Worker for minter; the other fields are zero.
type Parsed struct {
	Kind   Kind
	Queue  string
	ID     string
	Lane   string
	Worker int
}

// Key rebuilds the key Parsed was read from.
func (p Parsed) Key() string {
	switch p.Kind {
	case KindBundle:
		return bundleKey
	case KindMinter:
		return minterPrefix + strconv.Itoa(p.Worker)
	case KindJob:
		return "emq:{" + p.Queue + "}:job:" + p.ID
	case KindLane:
		return "emq:{" + p.Queue + "}:lane:" + p.Lane
	}
	return "emq:{" + p.Queue + "}:" + string(p.Kind)
}

// ErrForeign matches (errors.Is) every key outside the grammar.
var ErrForeign = errors.New("keys: foreign key")

// ForeignError is a key outside the grammar. It matches ErrForeign and its cause, which is an
// *emqerr.Error (EMQKEY, or EMQKIND for a job id of another brand).
type ForeignError struct {
	Key   string
	Cause error
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("keys: foreign key %q: %v", e.Key, e.Cause)
}

// Unwrap exposes both ErrForeign and the cause to errors.Is / errors.As.
func (e *ForeignError) Unwrap() []error { return []error{ErrForeign, e.Cause} }

func foreign(key, format string, a ...any) error {
	return &ForeignError{Key: key, Cause: &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf(format, a...)}}
}

// Parse reads any string as a key of the grammar. It is total: every input yields a Parsed or a
// *ForeignError, never a panic; and Parse(k).Key() == k for every key it accepts.
func Parse(key string) (Parsed, error) {
	switch {
	case key == bundleKey:
		return Parsed{Kind: KindBundle}, nil
	case strings.HasPrefix(key, minterPrefix):
		ws := key[len(minterPrefix):]
		w, err := strconv.Atoi(ws)
		if err != nil || w < 0 || w > ids.MaxWorker || strconv.Itoa(w) != ws {
			return Parsed{}, foreign(key, "minter worker %q: want a canonical decimal 0-%d", ws, ids.MaxWorker)
		}
		return Parsed{Kind: KindMinter, Worker: w}, nil
	case !strings.HasPrefix(key, "emq:{"):
		return Parsed{}, foreign(key, "neither emq:{q}: nor {emq}:")
	}
	rest := key[len("emq:{"):]
	end := strings.Index(rest, "}:")
	if end < 0 {
		return Parsed{}, foreign(key, "no '}:' after the queue name")
	}
	q, suffix := rest[:end], rest[end+2:]
	if !ValidName(q) {
		return Parsed{}, foreign(key, "queue name %q outside the grammar", q)
	}
	if id, ok := strings.CutPrefix(suffix, "job:"); ok {
		if _, err := ids.ParseJob(id); err != nil {
			return Parsed{}, &ForeignError{Key: key, Cause: err}
		}
		return Parsed{Kind: KindJob, Queue: q, ID: id}, nil
	}
	if g, ok := strings.CutPrefix(suffix, "lane:"); ok {
		if !ValidName(g) {
			return Parsed{}, foreign(key, "lane name %q outside the grammar", g)
		}
		return Parsed{Kind: KindLane, Queue: q, Lane: g}, nil
	}
	for _, k := range queueKinds {
		if suffix == string(k) {
			return Parsed{Kind: k, Queue: q}, nil
		}
	}
	return Parsed{}, foreign(key, "unknown suffix %q", suffix)
}
