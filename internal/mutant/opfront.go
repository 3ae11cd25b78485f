package mutant

import (
	"context"
	"slices"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
)

// An op front answers one op of the op table (PROTOCOL.md Part B, "Ops") otherwise than its row
// says, on the typed op: a result in another order, the wrong script, an empty claim that is not
// null.
type opFront struct {
	drivers.Driver
	mintReversed, lanePlain, claimNotNull bool
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

// Enqueue runs the plain enqueue script whatever the lane.
func (f opFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if f.lanePlain {
		a.Lane = ""
	}
	return f.Driver.Enqueue(ctx, a)
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
	{Name: "batch-enqueue-reversed", Contract: "C02", Rule: "A17-enqueue-batch", Defect: "enqueue_batch answers its {id, created} list in reverse, not one per job in order",
		Go: sessionWrap(func(f *sessionFront) {
			f.enq = func(a protocol.EnqueueBatchArgs, r protocol.EnqueueBatchResult) (protocol.EnqueueBatchArgs, protocol.EnqueueBatchResult) {
				slices.Reverse(r.Jobs)
				return a, r
			}
		})},
}
