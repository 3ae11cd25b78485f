package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
)

// latencyRun is one system's figures over the rounds.
type latencyRun struct {
	hist, late *measure.Hist
	res        *LatencyResult
	cpu        measure.Acc
}

// runLatency is the latency family: each system offered the same rate for the same time,
// open loop, in rounds interleaved across the systems; each round's p99 is kept and the
// systems compared on the median of their rounds' p99s.
func (e *env) runLatency(ctx context.Context) {
	p := e.p
	ls := &LatencyScenario{Name: queue.Latency, Rate: p.Rate, Seconds: p.LatencyDuration.Seconds(), Rounds: p.LatencyRounds,
		Workers: p.Workers, Senders: p.Producers, PlotFile: "latency-e2e-" + e.ax.name + ".svg",
		Title: fmt.Sprintf("enqueue → handler start at %.0f jobs/s offered, %d rounds of %.0fs after a %.0fs warm-up, %d workers each, %d senders (open loop)",
			p.Rate, p.LatencyRounds, p.LatencyDuration.Seconds(), p.WarmUp.Seconds(), p.Workers, p.Producers)}
	qs := e.systemsFor(queue.Latency)
	runs := make([]*latencyRun, len(qs))
	for i, q := range qs {
		runs[i] = &latencyRun{hist: measure.NewHist(), late: measure.NewHist(), res: &LatencyResult{System: q.Info().Name}}
	}
	tail := &tailAcc{}
	// The engines' own CPU is the signal: the machine-wide figure (/proc/stat) read lower than
	// the parties' sum in this kit's containers, and missed PostgreSQL still busy after the
	// Postgres queues' rounds through the next system's round.
	quiet := &measure.Settler{Window: 250 * time.Millisecond, Most: 5 * time.Second, Margin: 0.02, Sample: e.clock.Engines}
	for i, q := range qs {
		e.warmUp(ctx, q, runs[i])
	}
	for round := range max(1, p.LatencyRounds) {
		for i, q := range qs {
			if runs[i].res.Err != "" {
				continue
			}
			e.latencyRound(ctx, q, runs[i], round, tail, quiet)
		}
	}
	for i, r := range runs {
		r.res.Latency, r.res.SenderLate, r.res.CPU = r.hist.Summary(), r.late.Summary(), r.cpu.CPU()
		r.res.settle(qs[i].Info(), e.enqueueRate(r.res.System))
		ls.Results = append(ls.Results, r.res)
	}
	ls.Ratios = latencyRatios(ls.Results, e.engines(), e.models())
	e.run.Latency = ls
	// A gate re-run keeps the first measurement's tail breakdown and its variants: they are
	// figures to read, not judged, and the variants' rounds would lengthen every re-run.
	if t := tail.tail(); t != nil && e.run.Tail == nil {
		t.Server, t.Stalls = tail.server, tail.stalls
		e.tailVariants(ctx, t)
		e.run.Tail = t
	}
}

// warmUp runs one unmeasured round of WarmUp at the offered rate for q before its measured
// rounds: a client's first seconds (a JIT's first compiles, a pool's first connections, the
// server's first plans) are its start-up, not its latency (BullMQ's first two rounds ran 5–15×
// its later ones). Its samples are dropped; an error ends the system's rounds as a round's does.
func (e *env) warmUp(ctx context.Context, q queue.Queue, r *latencyRun) {
	if e.p.WarmUp <= 0 {
		return
	}
	if err := q.Reset(ctx); err != nil {
		r.res.Err = err.Error()
		return
	}
	var err error
	if d, ok := q.(queue.Driven); ok {
		_, err = d.RunLatency(ctx, e.p.Rate, e.p.WarmUp, e.p.Workers, e.p.Producers)
	} else {
		_, err = e.openLoopWith(ctx, q, e.p.Workers, e.p.WarmUp, nil)
	}
	if err != nil && !errors.Is(err, queue.ErrIncomplete) {
		r.res.Err = "warm-up: " + err.Error()
		e.progress("%s %s warm-up: error: %v", queue.Latency, q.Info().Name, err)
	}
}

// latencyRound is one round of one system, folded into r; the bus's rounds are stamped for the
// tail's breakdown (Valkey's own latency read around its last round).
func (e *env) latencyRound(ctx context.Context, q queue.Queue, r *latencyRun, round int, tail *tailAcc, quiet *measure.Settler) {
	name := q.Info().Name
	if err := q.Reset(ctx); err != nil {
		r.res.Err = err.Error()
		return
	}
	busy, waited, _ := quiet.Settle(ctx)
	r.res.RoundStartBusy = append(r.res.RoundStartBusy, busy)
	clk := e.clockFor(q)
	var s queue.Samples
	var err error
	c0 := clk.Read()
	switch d, ok := q.(queue.Driven); {
	case ok:
		s, err = d.RunLatency(ctx, e.p.Rate, e.p.LatencyDuration, e.p.Workers, e.p.Producers)
	case e.isBus(q):
		last := round == max(1, e.p.LatencyRounds)-1
		if round == 0 {
			_ = e.bus.WatchStalls(ctx)
		}
		if last {
			_ = e.bus.ResetStats(ctx)
		}
		st := newStamps(int64(e.p.Rate * e.p.LatencyDuration.Seconds()))
		tail.begin()
		s, err = e.openLoopWith(ctx, q, e.p.Workers, e.p.LatencyDuration, st)
		tail.end(st)
		if last {
			tail.server, _ = e.bus.LatencyStats(ctx)
			tail.stalls, _ = e.bus.Stalls(ctx)
		}
	default:
		s, err = e.openLoop(ctx, q)
	}
	c1 := clk.Read()
	r.cpu.Add(c0, c1)
	var one measure.Acc
	one.Add(c0, c1)
	r.res.RoundCPU = append(r.res.RoundCPU, one.CPU())
	hist := measure.NewHist()
	hist.RecordMicros(s.LatencyUS)
	r.hist.Merge(hist)
	r.late.RecordMicros(s.LateUS)
	r.res.Offered += s.Offered
	r.res.Sent += s.Sent
	r.res.Received += s.Received
	r.res.SendSeconds += s.SendSeconds
	if err != nil {
		r.res.Err = err.Error()
		e.progress("%s %s round %d: error: %v", queue.Latency, name, round+1, err)
		return
	}
	sum := hist.Summary()
	behind := behindBy(s, e.p.Rate, e.p.LatencyDuration)
	r.res.RoundP99 = append(r.res.RoundP99, sum.P99)
	r.res.RoundSaturated = append(r.res.RoundSaturated, behind != "")
	r.res.RoundBehind = append(r.res.RoundBehind, behind)
	note := ""
	if behind != "" {
		note = " SATURATED: " + behind
	}
	e.progress("%s %s round %d/%d: p50 %.2fms p99 %.2fms p99.9 %.2fms max %.2fms (%d jobs; engines %.0f%% busy at its start, after %.1fs settling)%s",
		queue.Latency, name, round+1, e.p.LatencyRounds, sum.P50, sum.P99, sum.P999, sum.Max, s.Received, 100*busy, waited.Seconds(), note)
}

// The offered rate was offered when every job was sent within a tenth of the round over its
// duration and the generator's hand-offs were late by at most LateBound at p99: past either, the
// senders fell behind and the round's latencies are a queue's backlog, not its latency.
const LateBound = 5 * time.Millisecond

// behindBy says how a round fell behind the offered rate ("": it did not).
func behindBy(s queue.Samples, rate float64, d time.Duration) string {
	var why []string
	if s.Failed > 0 {
		why = append(why, fmt.Sprintf("%d of its %d enqueues failed (the client gave up: %s)", s.Failed, s.Offered, s.FailedWhy))
	}
	if s.GaveUpBehind > 0 {
		why = append(why, fmt.Sprintf("its senders fell %d jobs behind by job %d of %d, and the generator stopped there", s.GaveUpBehind, s.GaveUpAt, s.Offered))
	}
	if s.SendSeconds > 1.1*d.Seconds() {
		why = append(why, fmt.Sprintf("its %d enqueues took %.1fs for a %.0fs round (%.0f jobs/s of the %.0f offered)",
			s.Sent, s.SendSeconds, d.Seconds(), float64(s.Sent)/s.SendSeconds, rate))
	}
	if late := measure.NewHist(); len(s.LateUS) > 0 {
		late.RecordMicros(s.LateUS)
		if p99 := late.Summary().P99; p99 > float64(LateBound)/1e6 {
			why = append(why, fmt.Sprintf("the generator handed jobs on %.1f ms late at p99 (bound %v)", p99, LateBound))
		}
	}
	return strings.Join(why, "; ")
}

// settle takes the p99 median over the rounds that kept up, and names the limit: what fell
// behind when most rounds did, else how the system's consumer learns of a job (info.Wake).
// enqueue is the system's concurrent-enqueue figure of this run (0: not measured).
func (r *LatencyResult) settle(info queue.Info, enqueue float64) {
	var kept []float64
	var behind []string
	for i, p := range r.RoundP99 {
		if r.RoundSaturated[i] {
			behind = append(behind, r.RoundBehind[i])
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) > 0 {
		r.P99Median = measure.SpreadOf(kept).Median
	}
	r.Limit = info.Wake
	if 2*len(behind) <= len(r.RoundP99) {
		return
	}
	r.Saturated, r.P99Median = true, 0
	r.Limit = fmt.Sprintf("SATURATED in %d of %d rounds: %s", len(behind), len(r.RoundP99), behind[0])
	if enqueue > 0 {
		r.Limit += fmt.Sprintf("; its enqueue from %s measured %.0f jobs/s in this run", queue.EnqueueConc, enqueue)
	}
}

// enqueueRate is a system's concurrent-enqueue median of the run (0 when not measured).
func (e *env) enqueueRate(system string) float64 {
	if r := e.run.scenario(queue.EnqueueConc).Result(system); r != nil {
		return r.JobsPerS.Median
	}
	return 0
}

// openLoop offers the rate for one round to an in-process system (consumed by W workers) and
// measures enqueue → handler start. Each job carries its intended send instant and latency is
// counted from that instant, not from when a sender got round to it: a stalled sender cannot
// hide queueing delay (coordinated omission). Senders are a pool so one slow enqueue does not
// delay the schedule.
func (e *env) openLoop(ctx context.Context, q queue.Queue) (queue.Samples, error) {
	return e.openLoopWith(ctx, q, e.p.Workers, e.p.LatencyDuration, nil)
}

// openLoopWith is openLoop with workers slots for d, stamping each job's hand-off, Enqueue return
// and handler start into st (nil: none).
func (e *env) openLoopWith(ctx context.Context, q queue.Queue, workers int, d time.Duration, st *stamps) (queue.Samples, error) {
	c, okc := q.(queue.Consumer)
	eq, oke := q.(queue.Enqueuer)
	if !okc || !oke {
		return queue.Samples{}, fmt.Errorf("bench: %s offers %s but cannot enqueue and consume in process", q.Info().Name, queue.Latency)
	}
	var mu sync.Mutex
	var s queue.Samples
	var received atomic.Int64
	stop, err := c.Consume(ctx, workers, func(sent int64) {
		now := time.Now().UnixNano()
		if i := st.index(sent); i >= 0 {
			st.t3[i] = now
		}
		us := float64(now-sent) / 1e3
		mu.Lock()
		s.LatencyUS = append(s.LatencyUS, us)
		mu.Unlock()
		received.Add(1)
	})
	if err != nil {
		return s, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	// Consumers start (River elects a leader and listens, the bus parks, the model listens):
	// start-up is not what this scenario measures.
	if !queue.Sleep(ctx, time.Second) {
		return s, ctx.Err()
	}
	late, sendErr := e.send(ctx, eq, &s, d, st)
	// Wait for the tail: every sent job must reach a handler.
	deadline := time.Now().Add(10*time.Second + d)
	for received.Load() < s.Sent && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stopped = true
	serr := stop()
	mu.Lock()
	defer mu.Unlock()
	s.Received, s.LateUS = received.Load(), late
	switch {
	case sendErr != nil:
		return s, fmt.Errorf("enqueue: %w", sendErr)
	case serr != nil:
		return s, fmt.Errorf("stop consumers: %w", serr)
	case s.Received < s.Sent:
		return s, fmt.Errorf("%w: %d of %d jobs reached a handler", queue.ErrIncomplete, s.Received, s.Sent)
	}
	return s, nil
}

// send is the open loop's generator: rate × d jobs, each handed to one of the senders at its
// intended instant. It returns the senders' lateness (µs) and the first enqueue error.
func (e *env) send(ctx context.Context, eq queue.Enqueuer, s *queue.Samples, d time.Duration, st *stamps) ([]float64, error) {
	n := int64(e.p.Rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / e.p.Rate)
	todo := make(chan int64, n)
	var sendErr atomic.Pointer[error]
	var sent atomic.Int64
	late := make([][]float64, e.p.Producers)
	var wg sync.WaitGroup
	for w := range e.p.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range todo {
				t1 := time.Now().UnixNano()
				late[w] = append(late[w], float64(t1-t)/1e3)
				if err := eq.Enqueue(ctx, queue.Payload(t)); err != nil {
					sendErr.CompareAndSwap(nil, &err)
					continue
				}
				if i := st.index(t); i >= 0 {
					st.t1[i], st.t2[i] = t1, time.Now().UnixNano()
				}
				sent.Add(1)
			}
		}()
	}
	start := time.Now()
	if st != nil {
		st.start.Store(start.UnixNano())
		st.interval.Store(int64(interval))
	}
	tick := newTicker()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if !tick.until(ctx, at) {
			break
		}
		if behind := int64(len(todo)); behind >= queue.GiveUp(n) {
			s.GaveUpAt, s.GaveUpBehind = i, behind
			break
		}
		todo <- at.UnixNano()
	}
	tick.stop()
	close(todo)
	wg.Wait()
	s.Offered, s.Sent, s.SendSeconds = n, sent.Load(), time.Since(start).Seconds()
	var all []float64
	for _, l := range late {
		all = append(all, l...)
	}
	if p := sendErr.Load(); p != nil {
		return all, *p
	}
	return all, nil
}
