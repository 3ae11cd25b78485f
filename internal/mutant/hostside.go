package mutant

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// A lax key builder is a port front that lets through what the canon's key builder refuses.
// The reference bus refuses such a name or id itself, so the front hands the bus a valid alias
// and a command hook puts the refused text back into every command: the lax bytes really reach
// the server, as they would from a port whose builder concatenates what it is given.
type lax struct {
	kind    string            // "name", "brand" or an idDefect
	mu      sync.Mutex        // guards the maps: the hook runs on the bus's goroutines
	alias   map[string]string // refused text → its alias
	refused map[string]string // alias → the refused text
}

// laxNames admits queue and lane names outside the grammar.
func laxNames(opt *bus.Options) Wrap { return newLax("name").install(opt) }

// laxBrands admits well-formed ids of another brand.
func laxBrands(opt *bus.Options) Wrap { return newLax("brand").install(opt) }

func newLax(kind string) *lax {
	return &lax{kind: kind, alias: map[string]string{}, refused: map[string]string{}}
}

func (l *lax) install(opt *bus.Options) Wrap {
	opt.Test.Hook = chain(opt.Test.Hook, l.hook)
	return func(d drivers.Driver) drivers.Driver { return &laxFront{Driver: d, l: l} }
}

// aliasFor returns s's alias, minting one the first time.
func (l *lax) aliasFor(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.alias[s]; ok {
		return a
	}
	var a string
	if l.kind == "name" {
		a = fmt.Sprintf("laxname-%04d-x", len(l.alias))
	} else {
		a = ids.Encode(ids.BrandJob, 1<<62+uint64(len(l.alias)))
	}
	l.alias[s], l.refused[a] = a, s
	return a
}

// name aliases a queue or lane name the grammar refuses.
func (l *lax) name(s string, optional bool) string {
	if l.kind != "name" || keys.ValidName(s) || (optional && s == "") {
		return s
	}
	return l.aliasFor(s)
}

// laxID admits malformed ids of one defect (idDefect's names): each breaks one refusal of §2.4.
func laxID(defect string) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap { return newLax(defect).install(opt) }
}

// id aliases a well-formed id of another brand (kind "brand") or a malformed one of the
// lax builder's defect.
func (l *lax) id(s string) string {
	if l.kind == "name" || s == "" {
		return s // an empty id is the port's own "absent" question, not the builder's
	}
	if _, err := ids.ParseJob(s); l.kind == "brand" && err != nil && errors.Is(err, emqerr.Kind) ||
		l.kind == idDefect(s) {
		return l.aliasFor(s)
	}
	return s
}

// idDefect names what makes s no JOB id the grammar writes: "length", "brand-case" (not three
// capitals), "alphabet" (a digit outside base62), "above-largest" (past LygHa16AHYF); "" for
// a well-formed id of any brand.
func idDefect(s string) string {
	switch {
	case len(s) != 14:
		return "length"
	case strings.Trim(s[:3], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
		return "brand-case"
	case strings.Trim(s[3:], ids.Alphabet) != "":
		return "alphabet"
	case s[3:] > "LygHa16AHYF":
		return "above-largest"
	}
	return ""
}

// unalias puts the refused texts back into s.
func (l *lax) unalias(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for a, r := range l.refused {
		s = strings.ReplaceAll(s, a, r)
	}
	return s
}

func (l *lax) hook(args []any) []any {
	l.mu.Lock()
	empty := len(l.refused) == 0
	l.mu.Unlock()
	if empty {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = l.unalias(v)
		case []byte:
			out[i] = []byte(l.unalias(string(v)))
		default:
			out[i] = a
		}
	}
	return out
}

// laxFront is the port's front with the lax key builder.
type laxFront struct {
	drivers.Driver
	l *lax
}

func (f *laxFront) fence(a protocol.FenceArgs) protocol.FenceArgs {
	a.Queue, a.ID = f.l.name(a.Queue, false), f.l.id(a.ID)
	return a
}

func (f *laxFront) queue(a protocol.QueueArgs) protocol.QueueArgs {
	a.Queue, a.Lane = f.l.name(a.Queue, false), f.l.name(a.Lane, true)
	return a
}

func (f *laxFront) job(a protocol.JobArgs) protocol.JobArgs {
	a.Queue, a.ID = f.l.name(a.Queue, false), f.l.id(a.ID)
	return a
}

func (f *laxFront) claimed(r *protocol.ClaimResult, err error) (*protocol.ClaimResult, error) {
	if r != nil {
		r.ID = f.l.unalias(r.ID)
	}
	return r, err
}

func (f *laxFront) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	a.Queue, a.Lane, a.ID = f.l.name(a.Queue, false), f.l.name(a.Lane, true), f.l.id(a.ID)
	r, err := f.Driver.Key(ctx, a)
	r.Key = f.l.unalias(r.Key)
	return r, err
}

func (f *laxFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	a.Queue, a.Lane, a.ID = f.l.name(a.Queue, false), f.l.name(a.Lane, true), f.l.id(a.ID)
	r, err := f.Driver.Enqueue(ctx, a)
	r.ID = f.l.unalias(r.ID)
	return r, err
}

func (f *laxFront) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	a.Queue = f.l.name(a.Queue, false)
	return f.claimed(f.Driver.Claim(ctx, a))
}

func (f *laxFront) LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	a.Queue = f.l.name(a.Queue, false)
	return f.claimed(f.Driver.LaneClaim(ctx, a))
}

func (f *laxFront) Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error) {
	a.FenceArgs = f.fence(a.FenceArgs)
	return f.Driver.Extend(ctx, a)
}

func (f *laxFront) Complete(ctx context.Context, a protocol.FenceArgs) error {
	return f.Driver.Complete(ctx, f.fence(a))
}

func (f *laxFront) Retry(ctx context.Context, a protocol.RetryArgs) (protocol.RetryResult, error) {
	a.FenceArgs = f.fence(a.FenceArgs)
	return f.Driver.Retry(ctx, a)
}

func (f *laxFront) Fail(ctx context.Context, a protocol.FailArgs) error {
	a.FenceArgs = f.fence(a.FenceArgs)
	return f.Driver.Fail(ctx, a)
}

func (f *laxFront) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error {
	a.FenceArgs = f.fence(a.FenceArgs)
	return f.Driver.Checkpoint(ctx, a)
}

func (f *laxFront) Revive(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	return f.Driver.Revive(ctx, f.job(a))
}

func (f *laxFront) Purge(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	return f.Driver.Purge(ctx, f.job(a))
}

func (f *laxFront) Pause(ctx context.Context, a protocol.QueueArgs) error {
	return f.Driver.Pause(ctx, f.queue(a))
}

func (f *laxFront) Resume(ctx context.Context, a protocol.QueueArgs) error {
	return f.Driver.Resume(ctx, f.queue(a))
}

func (f *laxFront) LanePause(ctx context.Context, a protocol.QueueArgs) error {
	return f.Driver.LanePause(ctx, f.queue(a))
}

func (f *laxFront) LaneResume(ctx context.Context, a protocol.QueueArgs) error {
	return f.Driver.LaneResume(ctx, f.queue(a))
}

func (f *laxFront) LaneCeiling(ctx context.Context, a protocol.QueueArgs) error {
	return f.Driver.LaneCeiling(ctx, f.queue(a))
}

// payloadUTF8 is a port front that round-trips a claimed payload through a UTF-8 string (a
// common mistake in hosts whose strings are text): bytes that are not UTF-8 become U+FFFD.
func payloadUTF8(*bus.Options) Wrap {
	return func(d drivers.Driver) drivers.Driver { return utf8Front{d} }
}

type utf8Front struct{ drivers.Driver }

func (f utf8Front) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	return mangle(f.Driver.Claim(ctx, a))
}

func (f utf8Front) LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	return mangle(f.Driver.LaneClaim(ctx, a))
}

func mangle(r *protocol.ClaimResult, err error) (*protocol.ClaimResult, error) {
	if r == nil {
		return r, err
	}
	if b, derr := base64.StdEncoding.DecodeString(r.PayloadB64); derr == nil {
		r.PayloadB64 = base64.StdEncoding.EncodeToString([]byte(strings.ToValidUTF8(string(b), "\uFFFD")))
	}
	return r, err
}

// slotFront hashes the whole key for the slot op, not its {hash tag}: the one place the
// reference computes slots for the protocol is its driver (drivers/inproc).
type slotFront struct{ drivers.Driver }

func (f slotFront) Slot(_ context.Context, a protocol.SlotArgs) (protocol.SlotResult, error) {
	return protocol.SlotResult{Slot: int(keys.CRC16(a.Key) % 16384)}, nil
}

// slotFirstCloseFront reads the hash tag between the first '{' and the key's first '}', wherever
// that '}' is (a tag only when it comes after the '{' with a byte between).
type slotFirstCloseFront struct{ drivers.Driver }

func (f slotFirstCloseFront) Slot(_ context.Context, a protocol.SlotArgs) (protocol.SlotResult, error) {
	tag := a.Key
	if open, end := strings.IndexByte(a.Key, '{'), strings.IndexByte(a.Key, '}'); open >= 0 && end > open+1 {
		tag = a.Key[open+1 : end]
	}
	return protocol.SlotResult{Slot: int(keys.CRC16(tag) % 16384)}, nil
}

// bareVersionFront names the bundle by its bare number in hello ("2.0.0", not "echomq:2.0.0").
type bareVersionFront struct{ drivers.Driver }

func (f bareVersionFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	h.Bundle = strings.TrimPrefix(h.Bundle, "echomq:")
	return h, err
}

// morgueAnyLimit is a port whose morgue takes any limit: past A16's 10000 it lists what 10000
// would, instead of refusing.
func morgueAnyLimit(*bus.Options) Wrap {
	return func(d drivers.Driver) drivers.Driver { return morgueFront{d} }
}

type morgueFront struct{ drivers.Driver }

func (f morgueFront) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	a.Limit = min(a.Limit, 10000)
	return f.Driver.Morgue(ctx, a)
}

// parkByConsumer is a port whose park reply groups the completions by consumer: each
// consumer's own list in turn, as if concatenated, instead of one list in completion order.
func parkByConsumer(*bus.Options) Wrap {
	return func(d drivers.Driver) drivers.Driver { return parkFront{d} }
}

type parkFront struct{ drivers.Driver }

func (f parkFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	r, err := f.Driver.Park(ctx, a)
	slices.SortStableFunc(r.Jobs, func(x, y protocol.Parked) int { return x.Consumer - y.Consumer })
	return r, err
}

// parkMaintains is a port whose park runs promote and reap on the queue every lease_ms/2 while
// its consumers run, as a consumer with maintenance left on would (bus.ConsumerOptions.Maintain).
func parkMaintains(*bus.Options) Wrap {
	return func(d drivers.Driver) drivers.Driver { return maintainFront{d} }
}

type maintainFront struct{ drivers.Driver }

func (f maintainFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	if a.LeaseMS >= 2 && a.LeaseMS <= 1_000_000_000 { // a longer half lease outlasts any park the kit sends
		every := time.Duration(a.LeaseMS/2) * time.Millisecond
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-t.C:
					_, _ = f.Driver.Promote(pctx, protocol.PromoteArgs{Queue: a.Queue, Limit: 1000})
					_, _ = f.Driver.Reap(pctx, protocol.ReapArgs{Queue: a.Queue, MaxAttempts: 10, Limit: 1000})
				}
			}
		}()
	}
	return f.Driver.Park(ctx, a)
}

// extendSecondsFront answers extend's deadline_ms in seconds (a Unix-seconds habit).
type extendSecondsFront struct{ drivers.Driver }

func (f extendSecondsFront) Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error) {
	r, err := f.Driver.Extend(ctx, a)
	r.DeadlineMS /= 1000
	return r, err
}

// laxKeyFront is a key op that writes the key of any queue name it is given: only its type is
// checked, the name goes into the key as it came.
type laxKeyFront struct{ drivers.Driver }

func (f laxKeyFront) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	r, err := f.Driver.Key(ctx, a)
	if err != nil && !keys.ValidName(a.Queue) {
		if ok, kerr := f.Driver.Key(ctx, protocol.KeyArgs{Queue: "q", Type: a.Type, ID: a.ID, Lane: a.Lane}); kerr == nil {
			return protocol.KeyResult{Key: strings.Replace(ok.Key, "{q}", "{"+a.Queue+"}", 1)}, nil
		}
	}
	return r, err
}
