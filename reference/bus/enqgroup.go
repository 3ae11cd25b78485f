package bus

import (
	"context"
	"fmt"
	"sync"

	"github.com/echomq/kit/reference/resp"
)

// enqGroup coalesces concurrent enqueues of one queue by group commit, without a goroutine or
// a timer: the caller that finds no call in flight leads, sending what has queued up (itself
// included) as one enqueue_batch (a lone job as enqueue); callers that arrive meanwhile queue
// up, and when the call returns the first of them leads the next.
type enqGroup struct {
	mu    sync.Mutex
	busy  bool // a leader is sending
	queue []*enqReq
}

type enqReq struct {
	row     string
	id      string
	payload []byte
	delay   int64
	created bool
	err     error
	lead    bool          // set under mu: this waiter leads the next call
	done    chan struct{} // closed when the outcome is set, or lead is
}

// enqueueGrouped enqueues one prepared job of q through q's group.
func (b *Bus) enqueueGrouped(ctx context.Context, q *qkeys, r *enqReq) (bool, error) {
	g := &q.enq
	g.mu.Lock()
	g.queue = append(g.queue, r)
	if g.busy {
		g.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			g.mu.Lock()
			if i := indexOf(g.queue, r); i >= 0 && !r.lead {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				g.mu.Unlock()
				return false, ctx.Err() // never sent
			}
			g.mu.Unlock()
			<-r.done // taken by a call in flight, or made leader: see it through
		}
		if !r.lead {
			return r.created, r.err
		}
		g.mu.Lock()
	}
	// Lead: r is at the head of the queue (a leader finds it empty; a promoted waiter is its
	// head). Take what queued up, send it, hand the lead on. The call is detached from r's
	// cancellation: it carries the others' jobs too.
	g.busy = true
	n := min(len(g.queue), MaxBatch)
	batch := append([]*enqReq(nil), g.queue[:n]...)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()
	b.sendGroup(context.WithoutCancel(ctx), q, batch)
	for _, x := range batch {
		if x != r {
			close(x.done)
		}
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.busy = false
	} else {
		next := g.queue[0]
		next.lead = true
		close(next.done)
	}
	g.mu.Unlock()
	return r.created, r.err
}

func indexOf(q []*enqReq, r *enqReq) int {
	for i, x := range q {
		if x == r {
			return i
		}
	}
	return -1
}

// sendGroup runs one enqueue (a lone job) or enqueue_batch and sets every request's outcome.
func (b *Bus) sendGroup(ctx context.Context, q *qkeys, batch []*enqReq) {
	if len(batch) == 1 {
		r := batch[0]
		var kb [4]string
		ks := append(kb[:0], r.row, q.pending, q.scheduled, q.wake)
		v, err := b.conn.EvalSha(ctx, b.scripts.enqueue, ks, r.id, r.payload, r.delay)
		r.created, r.err = v.Int == 1, err
		if err != nil {
			r.err = typed("enqueue", err)
		}
		return
	}
	ks := make([]string, 0, len(q.enqueueBatchKeys)+len(batch))
	ks = append(ks, q.enqueueBatchKeys...)
	args := make([]any, 0, 3*len(batch))
	for _, r := range batch {
		ks = append(ks, r.row)
		args = append(args, r.id, r.payload, r.delay)
	}
	v, err := b.conn.EvalSha(ctx, b.scripts.enqueueBatch, ks, args...)
	if err == nil && (v.Type != resp.Array || len(v.Elems) != len(batch)) {
		err = fmt.Errorf("bus: enqueue batch: %s reply of %d elements", v.Type, len(v.Elems))
	}
	for i, r := range batch {
		if err != nil {
			r.err = typed("enqueue", err)
			continue
		}
		r.created = v.Elems[i].Int == 1
	}
}
