package bus

import (
	"context"
	"fmt"

	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

// MaxBatch is the most jobs one batch script call takes (the bundle's bound on n).
const MaxBatch = 1000

// Ack names a claimed job to settle: its id and the token its claim returned.
type Ack struct {
	ID    string
	Token int64
}

// ClaimBatch leases up to n (1..MaxBatch) of the oldest pending jobs of queue in one script
// call, each exactly as Claim would; it returns none when the queue is empty or paused.
func (b *Bus) ClaimBatch(ctx context.Context, queue string, lease Millis, n int) ([]*Job, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("bus: claim batch: %w", argErr("n %d: want 1..%d", n, MaxBatch))
	}
	return b.claimBatch(ctx, q, int64(lease), n)
}

func (b *Bus) claimBatch(ctx context.Context, q *qkeys, ms int64, n int) ([]*Job, error) {
	if err := checkLease(ms); err != nil {
		return nil, fmt.Errorf("bus: claim batch: %w", err)
	}
	v, err := b.link.EvalSha(ctx, b.scripts.claimBatch, q.claimKeys, ms, n)
	if err != nil {
		return nil, typed("claim batch", err)
	}
	if v.Type != resp.Array || len(v.Elems) > n {
		return nil, fmt.Errorf("bus: claim batch: unexpected %s reply of %d elements", v.Type, len(v.Elems))
	}
	jobs := make([]*Job, 0, len(v.Elems))
	for _, e := range v.Elems {
		j, err := b.claimed(q, e, ms)
		if err != nil {
			return nil, err
		}
		if j == nil {
			return nil, fmt.Errorf("bus: claim batch: an empty claim in the reply")
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// CompleteBatch retires several claimed jobs of queue, MaxBatch pairs per script call, each
// fenced on its own token exactly as Complete. status[i] is nil when acks[i] completed, else
// its EMQSTALE error (that job changed nothing; the others still settled). err is for the call
// as a whole: a malformed id (nothing sent) or a failed call.
func (b *Bus) CompleteBatch(ctx context.Context, queue string, acks []Ack) (status []error, err error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	status = make([]error, len(acks))
	for lo := 0; lo < len(acks); lo += MaxBatch {
		part := acks[lo:min(lo+MaxBatch, len(acks))]
		if err := b.completeBatch(ctx, q, part, status[lo:lo+len(part)]); err != nil {
			return status, err
		}
	}
	return status, nil
}

// completeBatch runs one complete_batch over acks (at most MaxBatch), writing each pair's
// outcome into status.
func (b *Bus) completeBatch(ctx context.Context, q *qkeys, acks []Ack, status []error) error {
	ks := make([]string, 0, len(q.completeBatchKeys)+len(acks))
	ks = append(ks, q.completeBatchKeys...)
	args := make([]any, 0, 2*len(acks))
	for i, a := range acks {
		row, err := b.job(q, a.ID)
		if err != nil {
			return fmt.Errorf("bus: complete batch pair %d: %w", i, err)
		}
		if a.Token < 1 {
			return fmt.Errorf("bus: complete batch pair %d: %w", i, argErr("token %d: want at least 1", a.Token))
		}
		ks = append(ks, row)
		args = append(args, a.ID, a.Token)
	}
	v, err := b.link.EvalSha(ctx, b.scripts.completeBatch, ks, args...)
	if err != nil {
		return typed("complete batch", err)
	}
	if v.Type != resp.Array || len(v.Elems) != len(acks) {
		return fmt.Errorf("bus: complete batch: %d statuses for %d pairs", len(v.Elems), len(acks))
	}
	for i, e := range v.Elems {
		switch {
		case e.Type == resp.Integer && e.Int == 1:
			status[i] = nil
		case e.Type == resp.ErrorReply:
			status[i] = typed("complete "+acks[i].ID, e.Err())
		default:
			return fmt.Errorf("bus: complete batch: status %d is %s %q", i, e.Type, e.Text())
		}
	}
	return nil
}

// EnqueueBatch enqueues msgs into queue in one pipeline (one write, one round trip): the
// messages without a lane through enqueue_batch, MaxBatch per call, each lane message through
// lane_enqueue. The results are in msgs' order; a refused message fails the whole call before
// anything is sent.
func (b *Bus) EnqueueBatch(ctx context.Context, queue string, msgs []Message) ([]Enqueued, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	out := make([]Enqueued, len(msgs))
	// Where each message's result is: call index and position in that call's reply.
	type at struct{ call, pos int }
	where := make([]at, len(msgs))
	batch := new(connector.Batch)
	// The open enqueue_batch call; the batch encodes a call as it is added, so the slices are
	// reused for the next.
	n := min(len(msgs), MaxBatch)
	ks := make([]string, 0, len(q.enqueueBatchKeys)+n)
	args := make([]any, 0, 3*n)
	group := 0
	flush := func() {
		if group > 0 {
			batch.EvalSha(b.scripts.enqueueBatch, ks, args...)
			ks, args, group = ks[:0], args[:0], 0
		}
	}
	for i := range msgs {
		m := msgs[i]
		var kb [7]string
		s, k, delay, err := b.enqueueCall(ctx, q, &m, kb[:0])
		if err != nil {
			return nil, fmt.Errorf("bus: batch message %d: %w", i, err)
		}
		out[i].ID = m.ID
		if m.Lane != "" {
			// Lane enqueues are not batched; the open batch goes first to keep msgs' order.
			flush()
			where[i] = at{batch.Len(), -1}
			batch.EvalSha(s, k, m.ID, m.Lane, m.Payload, delay)
			continue
		}
		if group == 0 {
			ks = append(ks, q.enqueueBatchKeys...)
		}
		where[i] = at{batch.Len(), group}
		ks = append(ks, k[0])
		args = append(args, m.ID, m.Payload, delay)
		if group++; group == MaxBatch {
			flush()
		}
	}
	flush()
	if batch.Len() == 0 {
		return out, nil
	}
	vals, err := b.link.Exec(ctx, q.pending, batch, make([]resp.Value, 0, batch.Len()))
	if err != nil {
		return nil, typed("enqueue batch", err)
	}
	for i, w := range where {
		v := vals[w.call]
		if err := v.Err(); err != nil {
			return out, typed(fmt.Sprintf("enqueue batch message %d", i), err)
		}
		if w.pos >= 0 {
			if v.Type != resp.Array || w.pos >= len(v.Elems) {
				return out, fmt.Errorf("bus: enqueue batch: reply %s of %d elements", v.Type, len(v.Elems))
			}
			v = v.Elems[w.pos]
		}
		out[i].Created = v.Int == 1
	}
	return out, nil
}
