package mutant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/ids"
)

// The minter mutants hook the reference minter (reference/ids.Minter) rather than copy it, as a
// rueidis hook wraps a client: the bus builds its minter through its seam (bus.Seams.Minter), and
// a mutant's seam builds the reference minter over a lease store of its own (leaseHook) and
// wraps the ids it hands out (mintHook). The reference holds no defect; a defect is the few lines
// of its hook, and everything else (the scan for a worker id, the renewals, the local expiry, the
// close) is the reference's own code.

// minterDefects are deliberate minter defects, each one a mutant of the reference port
// (catalogue_c02.go, catalogue_c05.go): plain mistakes a port author could make in a minter.
// The zero value is the reference minter.
type minterDefects struct {
	StepBack   bool // a clock that steps back is minted from as read: ids decrease
	SeqWrap    bool // past 4095 ids in one millisecond the sequence wraps to 0 instead of waiting
	SeqCarry   bool // past 4095 the sequence carries into the worker bits instead of waiting
	SeqBorrow  bool // past 4095 the minter moves to the next millisecond at once, ahead of its clock
	UnixEpoch  bool // the millisecond field counts from 1970, not from 2024-01-01
	LowerFirst bool // base62 with the lower-case letters before the capitals (0-9a-zA-Z)
	SwapFields bool // the layout puts the sequence above the worker id: ms | seq | worker
	NoPad      bool // the base62 body is not left-padded with 0 to 11 characters
	Guess      bool // the worker id is picked at random and never leased (nor renewed)
	// NoFloor: the minter that replaces a lost one after a reconnect does not skip past the last
	// id minted, so within that millisecond a lower worker id mints smaller ids. The bus skips
	// ahead by minting until it passes its last id; a replacement minter with this defect
	// answers that first call with an id above every other (the bus discards it), so the skip
	// stops at once: as if the bus had none.
	NoFloor bool
	// TrustLocal: at a reconnect the minter trusts its own record of the lease instead of
	// renewing it on the server (the reference's own defect before the lease clauses).
	TrustLocal bool
	// FixedOwner: every minter leases under the same owner token (as with a host name for a
	// token), so one minter's renewal also renews another's lease on the same worker id.
	FixedOwner bool
	Squat      bool // a nil reply to SET … NX is taken for success: the minter mints under a taken worker id
	NoRenew    bool // the lease is never renewed, and the minter mints on after it lapsed
	IgnoreLoss bool // a refused renewal is not noticed: the minter mints on under a lost worker id
	// NoLocalExpiry: the minter keeps no clock of its own on the lease; a lease whose renewals
	// hang is trusted until the server refuses one.
	NoLocalExpiry bool
	// ShortScan: the scan for a free worker id wraps modulo 1023, so worker id 1023 is never
	// tried (an off-by-one in the range 0–1023).
	ShortScan bool
	// MissLast: the scan stops one short of a full turn, so the worker id just before its
	// random start is never tried (the loop bound checked with < instead of <=; make mutation's
	// survivor of reference/ids).
	MissLast bool
	// EndEarly: the last millisecond a snowflake holds (2⁴²−1) is refused as past the range (the
	// bound checked with >= instead of >; make mutation's survivor of reference/ids, seed 22914).
	EndEarly bool
	// ZeroFallback: when the scan finds every worker id leased, the minter mints under worker 0
	// anyway, unleased (as a default for "no id found"), instead of failing to start.
	ZeroFallback bool
}

// faulty is a Go mutant whose bus mints through the reference minter hooked with the defects d.
func faulty(d minterDefects) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		var mu sync.Mutex
		seen := map[ids.Leaser]bool{} // each bus's leaser: its second minter is a replacement
		opt.Test.Minter = func(ctx context.Context, l ids.Leaser, o ids.Options) (bus.Minter, error) {
			m, err := d.newMinter(ctx, l, o)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			m.probe.Store(d.NoFloor && seen[l])
			seen[l] = true
			mu.Unlock()
			return m, nil
		}
		return nil
	}
}

// newMinter is the reference minter, leasing through the defects' lease hook, its ids through
// their mint hook.
func (d minterDefects) newMinter(ctx context.Context, l ids.Leaser, o ids.Options) (*hookedMinter, error) {
	if d.FixedOwner && o.Owner == "" {
		o.Owner = "emq-minter"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ref, err := ids.NewMinter(ctx, leaseHook{l, d, new(int)}, o)
	if errors.Is(err, ids.ErrNoWorker) && d.ZeroFallback {
		o.Start = func(int) int { return 0 }
		ref, err = ids.NewMinter(ctx, leaseHook{l, minterDefects{Guess: true}, new(int)}, o)
	}
	if err != nil {
		return nil, err
	}
	return &hookedMinter{Minter: ref, d: d, now: o.Now}, nil
}

// leaseHook is the lease store the hooked minter is given: the bus's, with the lease defects.
type leaseHook struct {
	ids.Leaser
	d     minterDefects
	tried *int // how many ids this minter's scan has tried
}

func (h leaseHook) Acquire(ctx context.Context, w int, owner string, ttl time.Duration) (bool, error) {
	*h.tried++
	switch {
	case h.d.MissLast && *h.tried == ids.MaxWorker+1:
		return false, nil // the last id of the turn, never tried
	case h.d.Guess:
		return true, nil // the first id tried is taken as leased: nothing is asked of the server
	case h.d.ShortScan && w == ids.MaxWorker:
		return false, nil // never tried
	}
	ok, err := h.Leaser.Acquire(ctx, w, owner, ttl)
	return ok || h.d.Squat && err == nil, err
}

func (h leaseHook) Renew(ctx context.Context, w int, owner string, ttl time.Duration) (bool, error) {
	if h.d.NoRenew || h.d.Guess {
		return true, nil // taken as renewed: nothing is asked of the server
	}
	ok, err := h.Leaser.Renew(ctx, w, owner, ttl)
	switch {
	case err != nil && h.d.NoLocalExpiry:
		return true, nil // a renewal that hangs is taken as renewed: the lease never runs out here
	case err == nil && !ok && h.d.IgnoreLoss:
		return true, nil
	}
	return ok, err
}

// hookedMinter is the reference minter with the mint defects: it hands out the reference's
// snowflakes, written by the defects' layout, alphabet and epoch; where a defect mints what the
// reference never would (a smaller id after the clock stepped back, an id in a millisecond
// whose sequence is spent) it mints that id itself, and goes on from it as the reference would
// until the clock passes every millisecond it handed out.
type hookedMinter struct {
	*ids.Minter
	d     minterDefects
	now   func() time.Time
	probe atomic.Bool // NoFloor: the next call is the bus's floor skip, answered above all

	mu      sync.Mutex
	started bool
	ms      uint64 // the last snowflake handed out: its millisecond and sequence
	seq     int
	own     bool   // the hook minted it
	top     uint64 // the highest millisecond handed out
}

// Reaffirm is the reconnect's renewal; TrustLocal trusts the minter's own record instead.
func (m *hookedMinter) Reaffirm(ctx context.Context) error {
	if m.d.TrustLocal {
		return m.Minter.Err()
	}
	return m.Minter.Reaffirm(ctx)
}

// Next mints a JOB id.
func (m *hookedMinter) Next(ctx context.Context) (string, error) {
	if m.probe.Swap(false) {
		return ids.Encode(ids.BrandJob, ids.Compose(ids.MaxMillis, ids.MaxWorker, ids.MaxSequence)), nil
	}
	sf, err := m.NextSnowflake(ctx)
	if err != nil {
		return "", err
	}
	return m.d.encode(sf), nil
}

// NextSnowflake is the reference's, or the hook's own where a defect of the mint step bites.
func (m *hookedMinter) NextSnowflake(ctx context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.d.EndEarly && m.now().Sub(ids.Epoch).Milliseconds() >= ids.MaxMillis {
		return 0, fmt.Errorf("%w: %v", ids.ErrClock, m.now())
	}
	if sf, ok, err := m.mintOwn(); ok || err != nil {
		return sf, err
	}
	sf, err := m.Minter.NextSnowflake(ctx)
	if err != nil {
		return 0, err
	}
	m.ms, _, m.seq = ids.Split(sf)
	m.started, m.own, m.top = true, false, max(m.top, m.ms)
	return sf, nil
}

// mintOwn mints the id a defect of the mint step gives (ok), under the reference's lease.
func (m *hookedMinter) mintOwn() (sf uint64, ok bool, err error) {
	d := m.d
	if !m.started || !(d.StepBack || d.SeqWrap || d.SeqCarry || d.SeqBorrow) {
		return 0, false, nil
	}
	if err := m.Minter.Err(); err != nil {
		return 0, false, err // as the reference would answer: the lease is its own
	}
	ms := uint64(m.now().Sub(ids.Epoch).Milliseconds())
	spent := ms <= m.ms && m.seq >= ids.MaxSequence
	switch {
	case d.StepBack && ms < m.ms:
		m.ms, m.seq = ms, 0 // minted from the clock as read
	case spent && d.SeqWrap:
		m.seq = 0
	case spent && d.SeqBorrow:
		m.ms, m.seq = m.ms+1, 0 // ahead of the clock
	case spent && d.SeqCarry:
		m.seq++ // into the worker bits
	case m.own && ms <= m.top && ms > m.ms:
		m.ms, m.seq = ms, 0
	case m.own && ms <= m.top && m.seq < ids.MaxSequence:
		m.seq++
	default:
		return 0, false, nil // the reference's own id: after the clock passed every one handed out
	}
	m.own, m.top = true, max(m.top, m.ms)
	// Composed by hand: a carried sequence runs into the worker bits, as the defect has it.
	return m.ms<<(ids.WorkerBits+ids.SequenceBits) | uint64(m.Worker())<<ids.SequenceBits + uint64(m.seq), true, nil
}

// lowerFirst is the LowerFirst defect's alphabet: not in ASCII order.
const lowerFirst = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// encode renders a JOB id with the defects' epoch, layout, alphabet and padding.
func (d minterDefects) encode(sf uint64) string {
	if d.UnixEpoch {
		ms, worker, seq := ids.Split(sf)
		sf = ids.Compose(ms+uint64(ids.Epoch.UnixMilli()), worker, seq)
	}
	if d.SwapFields {
		ms, worker, seq := ids.Split(sf)
		sf = ms<<(ids.WorkerBits+ids.SequenceBits) | uint64(seq)<<ids.WorkerBits | uint64(worker)
	}
	if d.NoPad {
		id := ids.Encode(ids.BrandJob, sf)
		if body := strings.TrimLeft(id[ids.BrandLen:], "0"); body != "" {
			return ids.BrandJob + body
		}
		return ids.BrandJob + "0"
	}
	if !d.LowerFirst {
		return ids.Encode(ids.BrandJob, sf)
	}
	var b [ids.BodyLen]byte
	for i := ids.BodyLen - 1; i >= 0; i-- {
		b[i] = lowerFirst[sf%62]
		sf /= 62
	}
	return ids.BrandJob + string(b[:])
}

// releaseAny turns the minter's compare-and-release (SET {emq}:minter:<w> <owner> IFEQ <owner>
// PX 1) into a DEL of the lease key, whoever holds it.
func releaseAny() connector.Hook {
	return func(args []any) []any {
		if len(args) == 7 && strings.EqualFold(text(args[0]), "SET") && strings.HasPrefix(text(args[1]), "{emq}:minter:") &&
			strings.EqualFold(text(args[3]), "IFEQ") && strings.EqualFold(text(args[5]), "PX") && text(args[6]) == "1" {
			return []any{"DEL", args[1]}
		}
		return args
	}
}
