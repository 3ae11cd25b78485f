package inproc

import (
	"context"
	"errors"
	"fmt"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
)

var _ drivers.Batcher = (*Driver)(nil)

// EnqueueBatch enqueues the jobs in order through the bus's enqueue_batch (A17).
func (d *Driver) EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.EnqueueBatchResult{}, err
	}
	if len(a.Jobs) < 1 || len(a.Jobs) > protocol.MaxBatch {
		return protocol.EnqueueBatchResult{}, argErr("enqueue_batch of %d jobs: want 1..%d", len(a.Jobs), protocol.MaxBatch)
	}
	msgs := make([]bus.Message, len(a.Jobs))
	for i, j := range a.Jobs {
		p, err := unb64(fmt.Sprintf("jobs[%d].payload_b64", i), j.PayloadB64)
		if err != nil {
			return protocol.EnqueueBatchResult{}, err
		}
		delay, err := durMS(fmt.Sprintf("jobs[%d].delay_ms", i), j.DelayMS)
		if err != nil {
			return protocol.EnqueueBatchResult{}, err
		}
		msgs[i] = bus.Message{ID: j.ID, Payload: p, Delay: delay}
	}
	es, err := b.EnqueueBatch(ctx, a.Queue, msgs)
	if err != nil {
		return protocol.EnqueueBatchResult{}, err
	}
	out := protocol.EnqueueBatchResult{Jobs: make([]protocol.EnqueueResult, len(es))}
	for i, e := range es {
		out.Jobs[i] = protocol.EnqueueResult{ID: e.ID, Created: e.Created}
	}
	return out, nil
}

// ClaimBatch claims up to n of the oldest pending jobs in one claim_batch.
func (d *Driver) ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.ClaimBatchResult{}, err
	}
	lease, err := durMS("lease_ms", a.LeaseMS)
	if err != nil {
		return protocol.ClaimBatchResult{}, err
	}
	js, err := b.ClaimBatch(ctx, a.Queue, lease, int(max(min(a.N, protocol.MaxBatch+1), 0)))
	if err != nil {
		return protocol.ClaimBatchResult{}, err
	}
	out := protocol.ClaimBatchResult{Jobs: make([]protocol.ClaimResult, 0, len(js))}
	for _, j := range js {
		r, _ := claimResult(j, nil)
		out.Jobs = append(out.Jobs, *r)
	}
	return out, nil
}

// CompleteBatch settles the pairs in order through complete_batch: a stale pair's result is its
// EMQSTALE, and the others settle.
func (d *Driver) CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.CompleteBatchResult{}, err
	}
	if len(a.Jobs) < 1 || len(a.Jobs) > protocol.MaxBatch {
		return protocol.CompleteBatchResult{}, argErr("complete_batch of %d pairs: want 1..%d", len(a.Jobs), protocol.MaxBatch)
	}
	acks := make([]bus.Ack, len(a.Jobs))
	for i, p := range a.Jobs {
		acks[i] = bus.Ack{ID: p.ID, Token: p.Token}
	}
	status, err := b.CompleteBatch(ctx, a.Queue, acks)
	if err != nil {
		return protocol.CompleteBatchResult{}, err
	}
	out := protocol.CompleteBatchResult{Results: make([]protocol.PairResult, len(status))}
	for i, st := range status {
		out.Results[i] = pairResult(st)
	}
	return out, nil
}

// pairResult is one pair's outcome on the wire: a canon error keeps its type.
func pairResult(err error) protocol.PairResult {
	if err == nil {
		return protocol.PairResult{OK: true}
	}
	var e *emqerr.Error
	if errors.As(err, &e) {
		return protocol.PairResult{Error: &protocol.WireError{Type: string(e.Type), Message: e.Message}}
	}
	return protocol.PairResult{Error: &protocol.WireError{Type: protocol.ErrTypeInternal, Message: err.Error()}}
}
