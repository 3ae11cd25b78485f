package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// drain enqueues, runs the consumer through the fault, and waits for every job.
func (e *env) drain(ctx context.Context, d Drill, r *Result) error {
	b, err := open(ctx, e.px.addr())
	if err != nil {
		return err
	}
	e.b = b
	defer b.Close()
	ids := make([]string, e.opt.Jobs)
	for i := range ids {
		if ids[i], err = b.Mint(ctx); err != nil {
			return err
		}
	}
	half := len(ids) / 2
	if err := enqueue(ctx, b, e.queue, ids[:half]); err != nil {
		return err
	}
	var child Process
	var c *bus.Consumer
	stop := func() {}
	if d.fault == nil {
		if e.opt.Child == nil {
			return errors.New("the consumer-kill drill needs Options.Child")
		}
		if child, err = e.opt.Child(e.px.addr(), e.queue); err != nil {
			return err
		}
		go func() {
			for id := range child.Handled() {
				e.record(id, 0) // when it was claimed is not known: never counted as progress
			}
		}()
	} else {
		c, stop = e.consume(ctx, b)
	}
	e.waitHandled(ctx, len(ids)/8)
	// The rest is enqueued while the fault strikes: callers see errors (at once, or at their
	// deadline) and retry; enqueue is idempotent by id.
	enq := make(chan error, 1)
	go func() { enq <- enqueue(ctx, b, e.queue, ids[half:]) }()
	if d.fault == nil {
		// The leases the killed process held are in the server's active set at the kill.
		if err := e.strike(child.Kill); err != nil {
			return err
		}
		c, stop = e.consume(ctx, b) // a new consumer takes over
	} else if err := d.fault(ctx, e); err != nil {
		stop()
		return fmt.Errorf("fault: %w", err)
	}
	healed := time.Now()
	e.mu.Lock()
	e.healMS = e.serverMS(ctx)
	e.mu.Unlock()
	err = <-enq
	done := e.waitAll(ctx, ids)
	bgDone := e.waitBackground(30 * time.Second)
	if d.Replaces {
		waitReplaced(ctx, c, time.Minute)
	}
	stop()
	r.Reconnects = c.Health().Reconnects
	r.Resumed, r.ResumedOK = e.resumedAfter(healed)
	e.mu.Lock()
	r.Leased, r.Running = e.struck.leased, e.struck.running
	e.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("enqueue during the fault: %w", err)
	case !done:
		return errors.New("the drain did not finish within 30s")
	case !bgDone:
		return errors.New("the fault's own call (a write into a socket no longer read) never ended")
	}
	return nil
}

// waitBackground waits for the fault's own calls, at most d.
// waitReplaced waits, up to most, for the consumer's bus to count a replaced connection: the
// jobs may all be done through its other lines before its health check has found the dead one
// and replaced it, so the count is read once it has moved, not at one instant.
func waitReplaced(ctx context.Context, c *bus.Consumer, most time.Duration) {
	until := time.Now().Add(most)
	for c.Health().Reconnects == 0 && time.Now().Before(until) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) waitBackground(d time.Duration) bool {
	done := make(chan struct{})
	go func() { e.bg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// open opens the drill's bus. Its dial timeout (1 s) is also what a redial's handshake may take
// during the faults, and its health timeout (1 s) what a frozen socket's PING may wait: the
// drills' time scale (leases of 1–2 s, progress within one lease + 2 s), not the defaults'.
// The opening itself is the drill's set-up, tried a few times on a busy machine (an fsync
// behind other work can hold the fence's first write that long).
func open(ctx context.Context, addr string) (*bus.Bus, error) {
	var err error
	for range 5 {
		var b *bus.Bus
		if b, err = bus.Open(ctx, addr, bus.Options{DialTimeout: time.Second, HealthTimeout: time.Second}); err == nil {
			return b, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// record counts one run of id's handler; claimedMS is when the server leased it (its clock).
func (e *env) record(id string, claimedMS int64) {
	e.mu.Lock()
	e.handled[id]++
	e.runs = append(e.runs, run{time.Now(), claimedMS})
	e.mu.Unlock()
}

// claimedMS is when the server leased job id for lease: its active score less the lease (read
// as the handler starts, before any heartbeat extends it); 0 when unknown.
func (e *env) claimedMS(ctx context.Context, id string) int64 {
	v, err := e.in.Do(ctx, "ZSCORE", "emq:{"+e.queue+"}:active", id)
	if err != nil || v.Null {
		return 0
	}
	f, err := strconv.ParseFloat(string(v.Str), 64)
	if err != nil {
		return 0
	}
	return int64(f) - e.opt.Lease.Milliseconds()
}

// serverMS is the server's clock in ms, or 0 when it cannot be read.
func (e *env) serverMS(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		v, err := e.in.Do(ctx, "TIME")
		if err == nil && len(v.Elems) == 2 {
			s, _ := strconv.ParseInt(string(v.Elems[0].Str), 10, 64)
			us, _ := strconv.ParseInt(string(v.Elems[1].Str), 10, 64)
			return s*1000 + us/1000
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

// consume runs the in-process consumer until the returned stop is called.
func (e *env) consume(ctx context.Context, b *bus.Bus) (*bus.Consumer, func()) {
	c, err := b.Consumer(e.queue, bus.ConsumerOptions{Concurrency: e.opt.Workers, Lease: bus.Ms(e.opt.Lease),
		Park: 200 * time.Millisecond, Maintain: e.opt.Lease / 5, Grace: time.Second, MaxAttempts: 1000,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }},
		func(ctx context.Context, j *bus.Job) error {
			e.mu.Lock()
			e.running[j.ID] = true
			e.mu.Unlock()
			e.record(j.ID, e.claimedMS(ctx, j.ID))
			time.Sleep(time.Millisecond) // a little work, so the fault finds handlers running
			e.mu.Lock()
			delete(e.running, j.ID)
			e.mu.Unlock()
			return nil
		})
	if err != nil {
		panic(err) // the options above are valid
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(cctx)
	}()
	return c, func() { cancel(); <-done }
}

func enqueue(ctx context.Context, b *bus.Bus, queue string, ids []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := b.Enqueue(cctx, queue, []byte("job "+id), bus.WithID(id))
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func (e *env) waitHandled(ctx context.Context, n int) {
	for ctx.Err() == nil {
		e.mu.Lock()
		got := len(e.handled)
		e.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAll waits until every id was handled and the queue holds nothing pending, leased or
// scheduled.
func (e *env) waitAll(ctx context.Context, ids []string) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		e.mu.Lock()
		all := true
		for _, id := range ids {
			if e.handled[id] == 0 {
				all = false
				break
			}
		}
		e.mu.Unlock()
		if all && e.unsettled(ctx) == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// unsettled counts the queue's jobs still pending, leased or scheduled, in one atomic read
// (-1 when it cannot be read). Read one set at a time, a reap landing between two reads moved
// jobs from a set not yet read into one already read as empty, and the drain stopped with
// them pending.
func (e *env) unsettled(ctx context.Context) int64 {
	const sum = "local n = 0 for _, k in ipairs(KEYS) do n = n + redis.call('ZCARD', k) end return n"
	p := "emq:{" + e.queue + "}:"
	v, err := e.in.Do(ctx, "EVAL", sum, 3, p+"pending", p+"active", p+"scheduled")
	if err != nil {
		return -1
	}
	return v.Int
}

// resumedAfter is when, after healed, a handler first ran a job the server leased after the
// healing (by its own clock: a reply that was on its way at the fault is no progress), and
// whether that came within one lease + 2s (or the drain had finished before healing).
func (e *env) resumedAfter(healed time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rs := append([]run(nil), e.runs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
	for _, r := range rs {
		if !r.at.Before(healed) && e.healMS > 0 && r.claimedMS > e.healMS {
			d := r.at.Sub(healed)
			return d, d <= e.opt.Lease+2*time.Second
		}
	}
	return 0, len(e.handled) == e.opt.Jobs
}

// account checks the server after the drain: lost jobs, the morgue, duplicates, leftovers.
func (e *env) account(ctx context.Context, r *Result) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dead := map[string]bool{}
	if v, err := e.in.Do(ctx, "ZRANGE", "emq:{"+e.queue+"}:dead", 0, -1); err == nil {
		for _, el := range v.Elems {
			dead[string(el.Str)] = true
		}
	}
	e.mu.Lock()
	for id, n := range e.handled {
		if n > 1 {
			r.Dups++
			if !e.leased[id] {
				r.OutsideBound++
			}
		}
	}
	ids := make([]string, 0, len(e.handled))
	for id := range e.handled {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	// Every job's row is gone (completed) or buried; none is anywhere else.
	v, err := e.in.Do(ctx, "KEYS", "emq:{"+e.queue+"}:job:*")
	if err == nil {
		for _, el := range v.Elems {
			id := strings.TrimPrefix(string(el.Str), "emq:{"+e.queue+"}:job:")
			if !dead[id] {
				r.Lost = append(r.Lost, e.where(ctx, id))
			}
		}
	}
	r.Dead = len(dead)
	r.Completed = max(0, len(ids)-len(dead)-len(r.Lost))
	if len(ids) < r.Jobs {
		for range r.Jobs - len(ids) {
			r.Lost = append(r.Lost, "(never handled)")
		}
	}
	r.NothingLeft = e.nothingLeft(ctx)
}

// where describes a lost job for the failure log: its row and the sets that hold it.
func (e *env) where(ctx context.Context, id string) string {
	p := "emq:{" + e.queue + "}:"
	desc := id
	if v, err := e.in.Do(ctx, "HMGET", p+"job:"+id, "state", "attempts"); err == nil && len(v.Elems) == 2 {
		desc += fmt.Sprintf(" (state %s, attempts %s; in", v.Elems[0].Text(), v.Elems[1].Text())
	}
	in := false
	for _, set := range []string{"pending", "active", "scheduled", "dead"} {
		if v, err := e.in.Do(ctx, "ZSCORE", p+set, id); err == nil && !v.Null {
			desc += " " + set
			in = true
		}
	}
	if !in {
		desc += " no set"
	}
	return desc + ")"
}

// nothingLeft: the bus closed every connection, those a fault left behind included (read to
// their end through the proxy), and the server holds no client but the inspector.
func (e *env) nothingLeft(ctx context.Context) bool {
	if e.px.leftOpen(3*time.Second) > 0 {
		return false
	}
	for start := time.Now(); time.Since(start) < 3*time.Second; time.Sleep(20 * time.Millisecond) {
		v, err := e.in.Do(ctx, "CLIENT", "LIST", "TYPE", "normal")
		if err != nil {
			continue
		}
		if strings.Count(strings.TrimSpace(v.Text()), "\n")+1 == 1 {
			return true
		}
	}
	return false
}
