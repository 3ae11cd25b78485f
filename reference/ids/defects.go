package ids

import (
	"context"
	"strings"
	"time"
)

// Defects are deliberate minter defects, each one a mutant of the reference port
// (internal/mutant): plain mistakes a port author could make in the minter. The zero value is
// correct behaviour; nothing outside the mutant catalogue sets them.
type Defects struct {
	StepBack   bool // a clock that steps back is minted from as read: ids decrease
	SeqWrap    bool // past 4095 ids in one millisecond the sequence wraps to 0 instead of waiting
	SeqCarry   bool // past 4095 the sequence carries into the worker bits instead of waiting
	SeqBorrow  bool // past 4095 the minter moves to the next millisecond at once, ahead of its clock
	UnixEpoch  bool // the millisecond field counts from 1970, not from 2024-01-01
	LowerFirst bool // base62 with the lower-case letters before the capitals (0-9a-zA-Z)
	SwapFields bool // the layout puts the sequence above the worker id: ms | seq | worker
	NoPad      bool // the base62 body is not left-padded with 0 to 11 characters
	Guess      bool // the worker id is picked at random and never leased (nor renewed)
	ReleaseAny bool // Close deletes the lease key whoever holds it now (DEL, not compare-and-release)
	// NoFloor: the minter that replaces a lost one after a reconnect does not skip past the last
	// id minted, so within that millisecond a lower worker id mints smaller ids. The bus, which
	// replaces minters, reads it.
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
	NoRelease  bool // Close leaves the lease in place until its TTL runs out
}

// Or merges two sets of defects.
func (d Defects) Or(x Defects) Defects {
	return Defects{
		StepBack: d.StepBack || x.StepBack, SeqWrap: d.SeqWrap || x.SeqWrap, SeqCarry: d.SeqCarry || x.SeqCarry, SeqBorrow: d.SeqBorrow || x.SeqBorrow,
		UnixEpoch: d.UnixEpoch || x.UnixEpoch, LowerFirst: d.LowerFirst || x.LowerFirst, Squat: d.Squat || x.Squat,
		NoRenew: d.NoRenew || x.NoRenew, IgnoreLoss: d.IgnoreLoss || x.IgnoreLoss, NoRelease: d.NoRelease || x.NoRelease, SwapFields: d.SwapFields || x.SwapFields,
		NoPad: d.NoPad || x.NoPad, Guess: d.Guess || x.Guess, ReleaseAny: d.ReleaseAny || x.ReleaseAny,
		NoFloor: d.NoFloor || x.NoFloor, TrustLocal: d.TrustLocal || x.TrustLocal,
		FixedOwner: d.FixedOwner || x.FixedOwner,
	}
}

// lowerFirst is the LowerFirst defect's alphabet: not in ASCII order.
const lowerFirst = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// encode renders a JOB id, with the LowerFirst defect's alphabet and the SwapFields defect's
// layout when they are on.
func (d Defects) encode(sf uint64) string {
	if d.SwapFields {
		ms, worker, seq := Split(sf)
		sf = ms<<(WorkerBits+SequenceBits) | uint64(seq)<<WorkerBits | uint64(worker)
	}
	if d.NoPad {
		id := Encode(BrandJob, sf)
		if body := strings.TrimLeft(id[BrandLen:], "0"); body != "" {
			return BrandJob + body
		}
		return BrandJob + "0"
	}
	if !d.LowerFirst {
		return Encode(BrandJob, sf)
	}
	var b [BodyLen]byte
	for i := BodyLen - 1; i >= 0; i-- {
		b[i] = lowerFirst[sf%62]
		sf /= 62
	}
	return BrandJob + string(b[:])
}

// epoch is the zero of the millisecond field (the Unix epoch under the UnixEpoch defect).
func (d Defects) epoch() time.Time {
	if d.UnixEpoch {
		return time.Unix(0, 0)
	}
	return Epoch
}

// ForceReleaser is a Leaser that can also drop a lease whoever holds it (DEL): only the
// ReleaseAny defect uses it.
type ForceReleaser interface {
	ForceRelease(ctx context.Context, worker int) error
}
