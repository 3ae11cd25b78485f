package bus

import "context"

// The consumer's group commit. Workers that want a job, or want one settled, hand the request
// to one goroutine per kind, which sends everything that queued up while its previous call was
// in flight as one script call (up to MaxBatch), and nothing more: no timer, no added wait. A
// lone request goes as the single-job script. Every job is still fenced on its own token.

// claimReq is a worker asking for a job; the claimer answers on reply exactly once.
type claimReq struct{ reply chan claimRes }

type claimRes struct {
	j   *Job
	err error
}

// ackReq is a worker's handled job to complete; the completer answers on reply exactly once.
type ackReq struct {
	j     *Job
	reply chan error
}

// claimer serves claim requests until ctx ends. Claims run under hard: a claim the server ran
// must reach its worker.
func (c *Consumer) claimer(ctx, hard context.Context, in <-chan claimReq) {
	limit := min(c.opt.Concurrency, MaxBatch)
	reqs := make([]claimReq, 0, limit)
	for {
		select {
		case r := <-in:
			reqs = append(reqs[:0], r)
		case <-ctx.Done():
			return
		}
	more:
		for len(reqs) < limit {
			select {
			case r := <-in:
				reqs = append(reqs, r)
			default:
				break more
			}
		}
		var jobs []*Job
		var err error
		if len(reqs) == 1 {
			var j *Job
			if j, err = c.bus.claim(hard, c.q, c.opt.Lease, false); j != nil {
				jobs = []*Job{j}
			}
		} else {
			jobs, err = c.bus.claimBatch(hard, c.q, c.opt.Lease, len(reqs))
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
}

// completer completes handled jobs until in is closed (after every worker ended), so the
// acks of a graceful shutdown still go out.
func (c *Consumer) completer(hard context.Context, in <-chan ackReq) {
	reqs := make([]ackReq, 0, 64)
	var acks []Ack
	var status []error
	for r := range in {
		reqs = append(reqs[:0], r)
	more:
		for len(reqs) < MaxBatch {
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
		if len(reqs) == 1 {
			j := reqs[0].j
			reqs[0].reply <- c.bus.settle(hard, c.bus.scripts.complete, j, completeKeys)
			continue
		}
		acks, status = acks[:0], status[:0]
		for _, r := range reqs {
			acks = append(acks, Ack{r.j.ID, r.j.Token})
			status = append(status, nil)
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
}
