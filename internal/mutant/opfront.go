package mutant

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
)

// An op front answers one op of the op table (PROTOCOL.md Part B, "Ops") otherwise than its row
// says, on the typed op: a result in another order, the wrong script, an empty claim that is not
// null.
type opFront struct {
	drivers.Driver
	mintReversed, lanePlain, claimNotNull bool
	// ckptSpelled, reapSaysWhether, morgueDrains, parkOneShort, clockRealSpeed,
	// enqueueRetried: see their ops.
	ckptSpelled, reapSaysWhether, morgueDrains, parkOneShort, clockRealSpeed, enqueueRetried bool
}

// Key spells the checkpoint key's type out (…:checkpoint, not …:ckpt).
func (f opFront) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	r, err := f.Driver.Key(ctx, a)
	if f.ckptSpelled && err == nil && a.Type == "ckpt" {
		r.Key = strings.TrimSuffix(r.Key, "ckpt") + "checkpoint"
	}
	return r, err
}

// Reap answers whether it reaped (count 1), not how many.
func (f opFront) Reap(ctx context.Context, a protocol.ReapArgs) (protocol.CountResult, error) {
	r, err := f.Driver.Reap(ctx, a)
	if f.reapSaysWhether {
		r.Count = min(r.Count, 1)
	}
	return r, err
}

// Morgue purges the dead jobs it lists, as a dead-letter queue read by popping.
func (f opFront) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	r, err := f.Driver.Morgue(ctx, a)
	if f.morgueDrains && err == nil {
		for _, j := range r.Jobs {
			if _, err := f.Driver.Purge(ctx, protocol.JobArgs{Queue: a.Queue, ID: j.ID}); err != nil {
				return r, err
			}
		}
	}
	return r, err
}

// Park stops one job short of jobs.
func (f opFront) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	if f.parkOneShort && a.Jobs > 1 {
		a.Jobs--
	}
	return f.Driver.Park(ctx, a)
}

// Clock runs the minter's scripted clock at real speed whatever the scale.
func (f opFront) Clock(ctx context.Context, a protocol.ClockArgs) error {
	if f.clockRealSpeed && a.SetMS != 0 {
		a.Scale = 1
	}
	return f.Driver.(drivers.Clocker).Clock(ctx, a)
}

// Mint hands each caller's list back newest first.
func (f opFront) Mint(ctx context.Context, a protocol.MintArgs) (protocol.MintResult, error) {
	r, err := f.Driver.Mint(ctx, a)
	if f.mintReversed {
		for _, l := range r.IDs {
			slices.Reverse(l)
		}
	}
	return r, err
}

// Enqueue runs the plain enqueue script whatever the lane, or sends an enqueue again after a
// server error.
func (f opFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if f.lanePlain {
		a.Lane = ""
	}
	r, err := f.Driver.Enqueue(ctx, a)
	var canon *emqerr.Error
	if f.enqueueRetried && err != nil && !errors.As(err, &canon) {
		return f.Driver.Enqueue(ctx, a) // the script ran: its effect may apply twice
	}
	return r, err
}

// Claim answers an empty queue with a claim of nothing instead of null.
func (f opFront) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	r, err := f.Driver.Claim(ctx, a)
	if f.claimNotNull && r == nil && err == nil {
		return &protocol.ClaimResult{}, nil
	}
	return r, err
}

func opWrap(set func(*opFront)) func(*bus.Options) Wrap {
	return front(func(d drivers.Driver) drivers.Driver {
		f := opFront{Driver: d}
		set(&f)
		return f
	})
}

// opRowMutants break a row of the op table.
var opRowMutants = []Spec{
	{Name: "mint-lists-reversed", Contract: "C05", Rule: "mint-order", Defect: "mint answers each caller's ids newest first, not in the order the caller received them",
		Go: opWrap(func(f *opFront) { f.mintReversed = true })},
	{Name: "enqueue-lane-plain-script", Contract: "C12", Rule: "lanes", Defect: "enqueue with a lane runs the plain enqueue script: the job goes to the queue's pending set, not its lane",
		Go: opWrap(func(f *opFront) { f.lanePlain = true })},
	{Name: "claim-empty-not-null", Contract: "C06", Rule: "claim", Defect: "claim on an empty queue answers a claim of nothing (an empty id, token 0) instead of null",
		Go: opWrap(func(f *opFront) { f.claimNotNull = true })},
	{Name: "key-ckpt-spelled-out", Contract: "C02", Rule: "grammar", Defect: "the key op answers the checkpoint key as emq:{q}:checkpoint, not emq:{q}:ckpt",
		Go: opWrap(func(f *opFront) { f.ckptSpelled = true })},
	{Name: "reap-count-whether", Contract: "C11", Rule: "reap-back-to-pending", Defect: "reap answers count 1 when it reaped any job, not how many it reaped",
		Go: opWrap(func(f *opFront) { f.reapSaysWhether = true })},
	{Name: "morgue-drains", Contract: "C10", Rule: "morgue-op", Defect: "morgue purges the dead jobs it lists (a read that pops), instead of reading only",
		Go: opWrap(func(f *opFront) { f.morgueDrains = true })},
	{Name: "park-one-short", Contract: "C14", Rule: "park", Defect: "a park of two or more jobs returns once jobs − 1 were completed, not jobs",
		Go: opWrap(func(f *opFront) { f.parkOneShort = true })},
	{Name: "clock-ignores-scale", Contract: "C05", Rule: "A11-sequence-overflow", Defect: "the clock op's scripted minter clock advances 1 ms per real ms whatever its scale",
		Go: opWrap(func(f *opFront) { f.clockRealSpeed = true })},
	{Name: "enqueue-retried-on-error", Contract: "C06", Rule: "noscript", Defect: "an enqueue whose script answered a server error other than NOSCRIPT is sent again, though it ran",
		Go: opWrap(func(f *opFront) { f.enqueueRetried = true })},
	{Name: "batch-enqueue-reversed", Contract: "C02", Rule: "A17-enqueue-batch", Defect: "enqueue_batch answers its {id, created} list in reverse, not one per job in order",
		Go: sessionWrap(func(f *sessionFront) {
			f.enq = func(a protocol.EnqueueBatchArgs, r protocol.EnqueueBatchResult) (protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult) {
				slices.Reverse(r.Jobs)
				return a, r
			}
		})},
}
