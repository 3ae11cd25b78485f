package bus

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/wait"
)

// Handler runs one job. Returning nil completes it; an error retries it with backoff (or buries
// it at MaxAttempts); an error wrapped by Permanent buries it at once. A handler may settle the
// job itself (j.Complete, j.Retry, j.Fail); the consumer then leaves it alone.
type Handler func(ctx context.Context, j *Job) error

// ConsumerOptions configure a Consumer. Zero fields take the defaults noted.
type ConsumerOptions struct {
	Concurrency int    // workers, each with its own parking connection; 1
	Lease       Millis // claim lease (3..MaxMS), extended by a heartbeat every Lease/3; 30 s
	MaxAttempts int64  // claims before a failing job is buried; 10
	// Backoff is the retry delay after the attempt-th failure; exponential from 1s, capped at
	// 10 minutes, when nil.
	Backoff func(attempt int) time.Duration
	Lanes   bool          // claim by rotating the lane ring instead of the queue's pending set
	Park    time.Duration // server-side timeout of one blocking pop on the wake key; 5s
	// Parked bounds the idle workers blocked on the wake key at once, each pop on its own
	// connection; the other idle workers wait in-process for a turn and send nothing. Each wake
	// costs the server a pass over every client blocked on the key, so a large pool wakes
	// faster parked on a few. Concurrency when zero.
	Parked int
	// Maintain is the interval of the consumer's reap and promote; Lease/2 when zero; negative
	// turns maintenance off (another process runs it).
	Maintain time.Duration
	// Grace is how long in-flight handlers may run after Run's context ends before their
	// contexts are cancelled; their jobs are then left to the reaper. 10s when zero.
	Grace time.Duration
	// Logf receives operational errors (a failed claim, a lost lease); nil discards them.
	Logf func(format string, args ...any)
	// OnHealth, if set, receives the consumer's health after every error it rides through
	// (from the goroutine that met it; keep it short).
	OnHealth func(Health)
}

// Health is what a consumer rode through so far.
type Health struct {
	Reconnects int64 // the bus's main connection replaced after a loss
	Retries    int64 // claims, settlements and parks that failed and were retried
	LastError  error // the last of those errors; nil when none
}

// Consumer drains one queue with a fixed pool of workers. Idle workers park on the queue's
// wake key (one blocking pop on a dedicated connection each, at most Parked at once) and send
// nothing else.
type Consumer struct {
	bus  *Bus
	q    *qkeys
	opt  ConsumerOptions
	h    Handler
	wake []any         // the BLPOP command
	ms   int64         // the lease in ms, exactly as the claims send it
	life time.Duration // the lease for the consumer's own timers; saturated past a Duration's range

	retries atomic.Int64
	last    atomic.Pointer[error]
	fatal   func(error) // ends Run with a typed refusal; set by Run
}

// Health reports what the consumer rode through so far.
func (c *Consumer) Health() Health {
	h := Health{Reconnects: c.bus.Reconnects(), Retries: c.retries.Load()}
	if e := c.last.Load(); e != nil {
		h.LastError = *e
	}
	return h
}

// rode records an error the consumer retries after; a typed refusal of the server (a changed
// bundle, a wrong-kind server after a restart) ends Run instead.
func (c *Consumer) rode(err error) {
	if refused(err) {
		if c.fatal != nil {
			c.fatal(err)
		}
		return
	}
	c.retries.Add(1)
	c.last.Store(&err)
	if c.opt.OnHealth != nil {
		c.opt.OnHealth(c.Health())
	}
}

// refused reports a final refusal: the fence's EMQVERSION / EMQSERVER, or a connection the
// server's handshake refused.
func refused(err error) bool {
	return errors.Is(err, emqerr.Version) || errors.Is(err, emqerr.Server) || errors.Is(err, connector.ErrRefused)
}

// leased bounds one claim or settlement of the consumer: a call never outlives a lease.
func (c *Consumer) leased(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.life)
}

// ErrLeaseLost is the cause a handler's context is cancelled with when its heartbeat finds the
// lease gone (the token is stale: the job was reaped or settled elsewhere).
var ErrLeaseLost = errors.New("bus: lease lost")

// ErrShutdown is the cause a handler's context is cancelled with when the grace period ends.
var ErrShutdown = errors.New("bus: consumer shut down")

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks a handler error as final: the job goes to the morgue without retries.
func Permanent(err error) error { return permanent{err} }

// DefaultBackoff doubles from 1s per attempt, capped at 10 minutes.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 10 {
		return 10 * time.Minute
	}
	return min(time.Second<<(attempt-1), 10*time.Minute)
}

// Consumer builds a consumer of queue; call Run to start it.
func (b *Bus) Consumer(queue string, opt ConsumerOptions, h Handler) (*Consumer, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("bus: consumer needs a handler")
	}
	if opt.Concurrency == 0 {
		opt.Concurrency = 1
	}
	if opt.Lease == 0 {
		opt.Lease = Ms(30 * time.Second)
	}
	ms, life := int64(opt.Lease), msDuration(int64(opt.Lease))
	if opt.MaxAttempts == 0 {
		opt.MaxAttempts = 10
	}
	if opt.Backoff == nil {
		opt.Backoff = DefaultBackoff
	}
	if opt.Park == 0 {
		opt.Park = 5 * time.Second
	}
	if opt.Maintain == 0 {
		opt.Maintain = life / 2
	}
	if opt.Grace == 0 {
		opt.Grace = 10 * time.Second
	}
	if opt.Parked == 0 || opt.Parked > opt.Concurrency {
		opt.Parked = opt.Concurrency
	}
	switch {
	case opt.Concurrency < 0, opt.MaxAttempts < 0, opt.Grace < 0, opt.Parked < 0:
		return nil, fmt.Errorf("bus: consumer: %w", argErr("negative concurrency, attempts, grace or parked"))
	case ms < 3 || ms > MaxMS:
		return nil, fmt.Errorf("bus: consumer: %w", argErr("lease %d ms: want 3..%d", ms, int64(MaxMS)))
	case opt.Park < time.Millisecond:
		return nil, fmt.Errorf("bus: consumer: %w", argErr("park %v: want at least 1ms", opt.Park))
	}
	c := &Consumer{bus: b, q: q, opt: opt, h: h, ms: ms, life: life}
	c.wake = []any{"BLPOP", q.wake, strconv.FormatFloat(opt.Park.Seconds(), 'f', 3, 64)}
	return c, nil
}

func (c *Consumer) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

// Run works the queue until ctx ends, then shuts down gracefully: no more claims, in-flight
// handlers get Grace to finish (their jobs are settled), then their contexts are cancelled and
// their jobs left to the reaper. Run returns once every goroutine it started has ended.
func (c *Consumer) Run(ctx context.Context) error {
	// A typed refusal of the server ends the run like a shutdown, and Run returns it.
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var fatal atomic.Pointer[error]
	c.fatal = func(err error) {
		if fatal.CompareAndSwap(nil, &err) {
			c.logf("bus: consumer %s: refused, stopping: %v", c.q.name, err)
			stopRun(err)
		}
	}
	result := func() error {
		if e := fatal.Load(); e != nil {
			return fmt.Errorf("bus: consumer %s: %w", c.q.name, *e)
		}
		return nil
	}
	// hard outlives ctx by the grace period: handlers and settlements run under it.
	hard, kill := context.WithCancelCause(context.WithoutCancel(ctx))
	defer kill(ErrShutdown)
	var wg, workers sync.WaitGroup
	// Lane consumers claim one lane_claim per worker (the ring rotates per claim); the others
	// claim through the claim batcher. All complete through the complete batcher.
	var claims chan claimReq
	var claimB *batcher[claimReq]
	if !c.opt.Lanes {
		claims, claimB = make(chan claimReq), c.claimBatcher(hard)
		wg.Add(1)
		go func() {
			defer wg.Done()
			claimB.run(ctx.Done(), claims)
		}()
	}
	// The park slots: a worker parks holding one, on the slot's connection (dialled at its first
	// use, closed when Run ends).
	slots := make(chan *parkSlot, c.opt.Parked)
	for range c.opt.Parked {
		slots <- &parkSlot{}
	}
	defer func() {
		for range c.opt.Parked {
			if s := <-slots; s.conn != nil {
				s.conn.Close()
			}
		}
	}()
	// Buffered for every worker: each has at most one completion out, and sends it without
	// waiting for the batcher (see worker.settle).
	acks, ackB := make(chan ackReq, c.opt.Concurrency), c.completeBatcher(hard)
	wg.Add(1)
	go func() {
		defer wg.Done()
		ackB.run(nil, acks)
	}()
	for i := 0; i < c.opt.Concurrency; i++ {
		w := &worker{c: c, idx: i, claims: claims, claimB: claimB, acks: acks, ackB: ackB, slots: slots,
			claimed: make(chan claimRes, 1), acked: make(chan error, 1)}
		workers.Add(1)
		go func() {
			defer workers.Done()
			w.run(ctx, hard)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		workers.Wait()
		close(acks)
	}()
	if c.opt.Maintain > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.maintain(ctx)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return result()
	case <-ctx.Done():
	}
	grace := time.NewTimer(c.opt.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		kill(ErrShutdown)
		<-done
	}
	return result()
}

// maintain runs promote and reap on a ticker; both arm the wake when they free work.
func (c *Consumer) maintain(ctx context.Context) {
	t := time.NewTicker(c.opt.Maintain)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		mctx, cancel := c.leased(ctx)
		if _, err := c.bus.promote(mctx, c.q, 1000); err != nil && ctx.Err() == nil {
			c.logf("bus: consumer %s: %v", c.q.name, err)
			c.rode(err)
		}
		if _, err := c.bus.reap(mctx, c.q, c.opt.MaxAttempts, 1000); err != nil && ctx.Err() == nil {
			c.logf("bus: consumer %s: %v", c.q.name, err)
			c.rode(err)
		}
		cancel()
	}
}

// worker is one slot of the pool: claim, handle, settle; park when there is nothing to claim.
type worker struct {
	c     *Consumer
	idx   int
	slots chan *parkSlot // taken while parked, returned on waking

	claims  chan<- claimReq // to the claim batcher's queue; nil for a lane consumer
	claimB  *batcher[claimReq]
	acks    chan<- ackReq // to the complete batcher's queue
	ackB    *batcher[ackReq]
	claimed chan claimRes // the claim batcher's answers
	acked   chan error    // the complete batcher's answers

	// The heartbeat: a timer reused across jobs; cur is the job it extends.
	hb       *time.Timer
	cur      atomic.Pointer[Job]
	hbMu     sync.Mutex
	hbClosed bool
	beats    sync.WaitGroup

	// pending is the completion sent and not yet answered (at most one), pendingUp the bus's
	// reconnect signal as it was when it went.
	pending   *Job
	pendingUp context.Context
}

func (w *worker) run(ctx, hard context.Context) {
	c := w.c
	// Per-worker parent of the handlers' contexts keeps their registration off a shared lock.
	wctx, wcancel := context.WithCancel(hard)
	w.hb = time.AfterFunc(time.Hour, w.beat)
	w.hb.Stop()
	defer func() {
		w.finishAck(hard)
		w.hbMu.Lock()
		w.hbClosed = true
		w.hbMu.Unlock()
		w.hb.Stop()
		w.beats.Wait()
		wcancel()
	}()
	fails := 0
	for ctx.Err() == nil {
		up := c.bus.up.current()
		j, err := w.claim(ctx, hard)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fails++
			c.logf("bus: consumer %s worker %d: %v", c.q.name, w.idx, err)
			c.rode(err)
			w.finishAck(hard)
			if !pause(ctx, up, backoffErr(fails)) {
				return
			}
			continue
		}
		fails = 0
		if j == nil {
			w.finishAck(hard) // settled before it waits, however long the park
			if !w.parkUntilWoken(ctx) {
				return
			}
			continue
		}
		w.handle(wctx, hard, j)
	}
}

// claim asks for one job: a lane claim of its own, or through the claim batcher (at once on
// this goroutine when a call is free). The claim runs under hard, not ctx: a claim the server
// ran must reach its handler.
func (w *worker) claim(ctx, hard context.Context) (*Job, error) {
	if w.claims == nil {
		cctx, cancel := w.c.leased(hard)
		defer cancel()
		return w.c.bus.claim(cctx, w.c.q, w.c.ms, true)
	}
	req := claimReq{w.claimed}
	if !w.claimB.try(req) {
		select {
		case w.claims <- req:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r := <-w.claimed
	return r.j, r.err
}

// complete hands the job to the complete batcher (sent at once on this goroutine when a call is
// free) and waits for its outcome: a completion sent again (finishAck).
func (w *worker) complete(j *Job) error {
	req := ackReq{j, w.acked}
	if !w.ackB.try(req) {
		w.acks <- req
	}
	return <-w.acked
}

func backoffErr(fails int) time.Duration {
	return min(10*time.Millisecond<<min(fails, 7), time.Second)
}

// pause waits d before a call is tried again, or less when the bus replaced a lost connection
// since up was taken (before the call that failed): what failed may work now. False when ctx
// ends.
func pause(ctx, up context.Context, d time.Duration) bool {
	return wait.SleepOr(ctx, up.Done(), d) == nil
}

// parkSlot is one place to park: a connection for the blocking pop, dialled at first use, and
// the bus's reconnect signal as it was when the line was dialled.
type parkSlot struct {
	conn *connector.Conn
	up   context.Context
}

// parkUntilWoken blocks on the wake key until a token arrives (true) or ctx ends (false). A pop
// that times out parks again: only a wake token sends the worker back to claim. The worker
// first waits, sending nothing, for a park slot; it hands the slot on as soon as it wakes, so
// another idle worker is blocked on the key while it claims.
func (w *worker) parkUntilWoken(ctx context.Context) bool {
	c := w.c
	var s *parkSlot
	select {
	case s = <-w.slots:
	case <-ctx.Done():
		return false
	}
	defer func() { w.slots <- s }()
	fails := 0
	for ctx.Err() == nil {
		if s.conn != nil && s.up.Err() != nil {
			// The bus replaced a lost connection since this line was dialled: the same fault (a
			// frozen path, a failover) may hold the line, so it is not trusted with a pop.
			s.conn.Close()
			s.conn = nil
		}
		if s.conn == nil {
			up := c.bus.up.current()
			p, err := c.bus.link.DialOwner(ctx, c.q.wake)
			if err != nil {
				fails++
				c.logf("bus: consumer %s worker %d: park: %v", c.q.name, w.idx, err)
				c.rode(err)
				if !pause(ctx, up, backoffErr(fails)) {
					return false
				}
				continue
			}
			s.conn, s.up = p, up
		}
		woken, err := c.pop(ctx, s)
		if err != nil {
			// A cancelled pop is still in flight on the server: close the line so it cannot
			// swallow a token meant for another consumer.
			s.conn.Close()
			s.conn = nil
			if ctx.Err() != nil {
				return false
			}
			if s.up.Err() != nil {
				// Cut short because the bus reconnected: look for work once, then park on a new
				// line (a token the old line took with it is made up for by the claim).
				c.logf("bus: consumer %s worker %d: the bus reconnected: parking on a new line", c.q.name, w.idx)
				return true
			}
			// In a cluster the queue's slot may have moved: the next line goes to its new owner.
			c.bus.link.Follow(ctx, err)
			c.logf("bus: consumer %s worker %d: park: %v", c.q.name, w.idx, err)
			c.rode(err)
			// Re-arm: a wake token may have been lost with the line (or the server's restart
			// may have left work without one), so look for work once before parking again.
			return pause(ctx, s.up, backoffErr(1))
		}
		fails = 0
		if woken {
			return true
		}
	}
	return false
}

// pop is one blocking pop on the wake key: true when a token arrived, false on its timeout. A
// reconnect of the bus after the line was dialled cuts it short: a line frozen with the main
// connection would otherwise be noticed only at the pop's read deadline, swallowing wakes.
func (c *Consumer) pop(ctx context.Context, s *parkSlot) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.up, cancel)()
	if p := c.bus.opt.Test.Park; p != nil {
		return p(ctx, s.conn, c.opt.Park, c.wake)
	}
	v, err := s.conn.DoBlocking(ctx, c.opt.Park, c.wake...)
	return err == nil && !v.Null, err
}

// handle runs the handler under a heartbeat and settles the job by its outcome.
func (w *worker) handle(wctx, hard context.Context, j *Job) {
	c := w.c
	j.Worker = w.idx
	hctx, stop := context.WithCancelCause(wctx)
	j.stop = stop
	w.cur.Store(j)
	w.hb.Reset(msDuration(j.lease.Load()) / 3)
	err := w.call(hctx, j)
	w.cur.Store(nil)
	w.hb.Stop()
	cause := context.Cause(hctx)
	stop(nil)
	if j.settled.Load() {
		return
	}
	switch {
	case errors.Is(cause, ErrLeaseLost):
		c.logf("bus: consumer %s: job %s token %d: lease lost while running", c.q.name, j.ID, j.Token)
		return
	case err != nil && hard.Err() != nil:
		return // cancelled by shutdown: the reaper redelivers it
	}
	w.settle(hard, j, err)
}

// settle completes, retries or buries j by its handler's outcome. A completion goes without
// waiting for its answer: the worker claims its next job while it travels and takes the answer
// before it settles again, parks or stops (finishAck), so its claims do not wait for its last
// completion's round trip (what bound the drain) and it never has more than one out. A
// settlement whose reply was lost (the connection failed, or no reply came by its deadline) is
// sent again once the bus has reconnected: it is fenced on the job's token, so a second one
// either lands while the lease holds or is refused EMQSTALE and changes nothing. Only a job
// whose lease ran out first is redelivered, so duplicates after a fault are bounded by the jobs
// leased at it.
func (w *worker) settle(hard context.Context, j *Job, herr error) {
	w.finishAck(hard)
	if herr == nil {
		w.pending, w.pendingUp = j, w.c.bus.up.current()
		w.acks <- ackReq{j, w.acked} // buffered for every worker: never waits
		return
	}
	for attempt := 1; ; attempt++ {
		up := w.c.bus.up.current()
		if !w.again(hard, j, w.settleOnce(hard, j, herr), attempt, up) {
			return
		}
	}
}

// finishAck takes the answer of the completion out, if any, and sends it again while its reply
// was lost, as settle does.
func (w *worker) finishAck(hard context.Context) {
	j, up := w.pending, w.pendingUp
	if j == nil {
		return
	}
	w.pending, w.pendingUp = nil, nil
	for attempt, err := 1, <-w.acked; w.again(hard, j, err, attempt, up); attempt++ {
		up = w.c.bus.up.current()
		err = w.settleOnce(hard, j, nil)
	}
}

// settleOnce sends j's settlement for its handler's outcome herr once and waits for it.
func (w *worker) settleOnce(hard context.Context, j *Job, herr error) error {
	c := w.c
	sctx, cancel := c.leased(hard)
	defer cancel()
	var p permanent
	switch {
	case herr == nil:
		return w.complete(j)
	case errors.As(herr, &p):
		return j.Fail(sctx, herr.Error())
	}
	_, err := j.Retry(sctx, c.opt.MaxAttempts, Ms(max(c.opt.Backoff(int(j.Token)), 0)), herr.Error())
	return err
}

// again judges a settlement's outcome err (its attempt-th, sent while up was the bus's
// reconnect signal): true when it must be sent again, after a pause cut short by a reconnect.
func (w *worker) again(hard context.Context, j *Job, err error, attempt int, up context.Context) bool {
	c := w.c
	if err == nil || hard.Err() != nil {
		return false
	}
	if !replyLost(err) {
		// EMQSTALE: the lease ran out first (or a lost earlier attempt settled it); the reaper
		// redelivers the job (at least once).
		c.logf("bus: consumer %s: settle job %s token %d (attempt %d): %v", c.q.name, j.ID, j.Token, attempt, err)
		c.rode(err)
		return false
	}
	c.logf("bus: consumer %s: settle job %s token %d: %v; sending it again", c.q.name, j.ID, j.Token, err)
	c.rode(err)
	return pause(hard, up, backoffErr(attempt))
}

// replyLost reports a call whose outcome is unknown: its connection failed, or its deadline
// passed with the reply still owed. Errors the server answered are not among them.
func replyLost(err error) bool {
	return errors.Is(err, connector.ErrConnLost) || errors.Is(err, context.DeadlineExceeded)
}

// call runs the handler, turning a panic into an error.
func (w *worker) call(ctx context.Context, j *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bus: handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return w.c.h(ctx, j)
}

// beat extends the current job's lease; it runs on the timer's goroutine.
func (w *worker) beat() {
	w.hbMu.Lock()
	if w.hbClosed {
		w.hbMu.Unlock()
		return
	}
	w.beats.Add(1)
	w.hbMu.Unlock()
	defer w.beats.Done()
	j := w.cur.Load()
	if j == nil {
		return
	}
	ms := j.lease.Load()
	lease := msDuration(ms)
	ctx, cancel := context.WithTimeout(context.Background(), lease/3)
	_, err := j.Extend(ctx, Millis(ms))
	cancel()
	if errors.Is(err, emqerr.Stale) {
		if w.cur.Load() == j {
			j.stop(ErrLeaseLost)
		}
		return
	}
	if err != nil {
		w.c.logf("bus: consumer %s: heartbeat job %s: %v", w.c.q.name, j.ID, err)
	}
	if w.cur.Load() == j {
		w.hb.Reset(lease / 3)
	}
}
