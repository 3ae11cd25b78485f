package bus

import (
	"context"
	"fmt"
	"sync"

	"github.com/echomq/kit/reference/resp"
)

// The bus's batching: a consumer's claims and completes, and enqueues under
// Options.BatchEnqueue, go through one batcher each. A request that finds a call free goes at
// once as the single-job script, sent by its own goroutine: a lone request waits for nothing and
// takes no hop through another goroutine. Requests that find every call out queue up and are
// gathered and sent as one script call (up to MaxBatch), with at most batchInFlight calls of a
// kind in flight: no timer, no added wait. Every job is still fenced on its own token.

// batchInFlight bounds each consumer batcher's calls in flight. With one, the server idled
// while a batch's reply travelled back and its workers re-asked, and a woken worker's claim
// waited behind a batch; a second call fills both gaps (measured: drain +6%, e2e p99 lower). A
// third only splits the batches smaller.
const batchInFlight = 2

// batcher gathers, sends, fans out: a request either goes at once on its caller's goroutine
// (try: a call was free) or is taken from in by run, which, while a call is free, sends what
// has queued up (up to limit) as one call; send answers every request it carries.
type batcher[R any] struct {
	limit int
	slots chan struct{} // one token per call in flight, inline or gathered
	send  func(reqs []R)
}

func newBatcher[R any](limit, inFlight int, send func(reqs []R)) *batcher[R] {
	return &batcher[R]{limit: limit, slots: make(chan struct{}, inFlight), send: send}
}

// try sends r alone, on the caller's goroutine, if a call is free, and reports whether it did;
// when every call is out, r must go through run's queue, where it joins the next batch. A
// request run is already holding for the next free call gets it first: try only takes a call
// nobody waits for.
func (b *batcher[R]) try(r R) bool {
	select {
	case b.slots <- struct{}{}:
	default:
		return false
	}
	defer func() { <-b.slots }()
	b.send([]R{r})
	return true
}

// close takes every call token for good: it returns once the calls in flight are answered, and
// no call starts after it (try then reports false, and run must have stopped).
func (b *batcher[R]) close() {
	for range cap(b.slots) {
		b.slots <- struct{}{}
	}
}

// run serves in until it is closed or stop is, then waits for its calls in flight (so the
// acks of a graceful shutdown still go out).
func (b *batcher[R]) run(stop <-chan struct{}, in <-chan R) {
	var calls sync.WaitGroup
	defer calls.Wait()
	for {
		var first R
		select {
		case r, ok := <-in:
			if !ok {
				return
			}
			first = r
		case <-stop:
			return
		}
		// Wait for a free call before gathering: what queues meanwhile joins this batch.
		b.slots <- struct{}{}
		reqs := append(make([]R, 0, 8), first)
	more:
		for len(reqs) < b.limit {
			select {
			case r, ok := <-in:
				if !ok {
					break more
				}
				reqs = append(reqs, r)
			default:
				break more
			}
		}
		calls.Add(1)
		go func() {
			defer func() { <-b.slots; calls.Done() }()
			b.send(reqs)
		}()
	}
}

// claimReq is a worker asking for a job; the claim batcher answers on reply exactly once.
type claimReq struct{ reply chan claimRes }

type claimRes struct {
	j   *Job
	err error
}

// ackReq is a worker's handled job to complete; the complete batcher answers on reply exactly
// once.
type ackReq struct {
	j     *Job
	reply chan error
}

// claimBatcher gathers the workers' claims. Claims run under hard: a claim the server ran must
// reach its worker.
func (c *Consumer) claimBatcher(hard context.Context) *batcher[claimReq] {
	return newBatcher(min(c.opt.Concurrency, MaxBatch), batchInFlight, func(reqs []claimReq) { c.claimFor(hard, reqs) })
}

// claimFor runs one claim (a lone request) or claim_batch and answers every request.
func (c *Consumer) claimFor(hard context.Context, reqs []claimReq) {
	hard, cancel := c.leased(hard)
	defer cancel()
	var jobs []*Job
	var err error
	if len(reqs) == 1 {
		var j *Job
		if j, err = c.bus.claim(hard, c.q, c.ms, false); j != nil {
			jobs = []*Job{j}
		}
	} else {
		jobs, err = c.bus.claimBatch(hard, c.q, c.ms, len(reqs))
	}
	for i, r := range reqs {
		var res claimRes
		switch {
		case err != nil:
			res.err = err
		case i < len(jobs):
			res.j = jobs[i]
		}
		r.reply <- res
	}
}

// completeBatcher gathers the workers' completes; its run goes on until its queue is closed
// (after every worker ended).
func (c *Consumer) completeBatcher(hard context.Context) *batcher[ackReq] {
	return newBatcher(MaxBatch, batchInFlight, func(reqs []ackReq) { c.completeFor(hard, reqs) })
}

// completeFor runs one complete (a lone request) or complete_batch and answers every request.
func (c *Consumer) completeFor(hard context.Context, reqs []ackReq) {
	hard, cancel := c.leased(hard)
	defer cancel()
	if len(reqs) == 1 {
		reqs[0].reply <- reqs[0].j.Complete(hard)
		return
	}
	acks := make([]Ack, len(reqs))
	status := make([]error, len(reqs))
	for i, r := range reqs {
		acks[i] = Ack{r.j.ID, r.j.Token}
	}
	err := c.bus.completeBatch(hard, c.q, acks, status)
	for i, r := range reqs {
		e := err
		if e == nil {
			e = status[i]
		}
		if e == nil {
			r.j.settled.Store(true)
		}
		r.reply <- e
	}
}

// enqReq is one prepared enqueue for the enqueue batcher.
type enqReq struct {
	row     string
	id      string
	payload []byte
	delay   int64
	created bool
	err     error
	done    chan struct{} // closed when the outcome is set
}

// enqBatcher is a queue's enqueue batcher, started at its first use and stopped by Close.
type enqBatcher struct {
	once sync.Once
	in   chan *enqReq
	b    *batcher[*enqReq]
}

// enqueueBatched enqueues one prepared job of q through q's batcher. A caller whose ctx ends
// before its job is taken gets ctx's error and the job is never sent; once taken, the call is
// seen through (it carries the others' jobs too).
func (b *Bus) enqueueBatched(ctx context.Context, q *qkeys, r *enqReq) (bool, error) {
	e := &q.enq
	e.once.Do(func() {
		e.in = make(chan *enqReq)
		// One call in flight: the next batch gathers while it is out.
		e.b = newBatcher(MaxBatch, 1, func(reqs []*enqReq) { b.sendEnqueues(q, reqs) })
		b.loops.Add(1)
		go func() {
			defer b.loops.Done()
			e.b.run(b.done, e.in)
		}()
	})
	if err := ctx.Err(); err != nil {
		return false, err
	}
	select {
	case <-b.done:
		return false, typed("enqueue", errBusClosed)
	default:
		if e.b == nil { // Close came first
			return false, typed("enqueue", errBusClosed)
		}
	}
	// A free call takes the job at once on this goroutine (Close waits for it, holding every
	// call token once it has closed done, so none starts after the check above would pass).
	if e.b.try(r) {
		return r.created, r.err
	}
	select {
	case e.in <- r:
	case <-ctx.Done():
		return false, ctx.Err()
	case <-b.done:
		return false, typed("enqueue", errBusClosed)
	}
	<-r.done
	return r.created, r.err
}

// sendEnqueues runs one enqueue (a lone job) or enqueue_batch and sets every request's
// outcome. The call is detached from the callers' contexts: it carries all of their jobs.
func (b *Bus) sendEnqueues(q *qkeys, batch []*enqReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	ctx := context.Background()
	if len(batch) == 1 {
		r := batch[0]
		var kb [4]string
		ks := append(kb[:0], r.row, q.pending, q.scheduled, q.wake)
		v, err := b.link.EvalSha(ctx, b.scripts.enqueue, ks, r.id, r.payload, r.delay)
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
	v, err := b.link.EvalSha(ctx, b.scripts.enqueueBatch, ks, args...)
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
