package bus

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

// Message is one job to enqueue. ID empty: the bus mints one. Delay > 0: scheduled on the
// server's clock. Lane non-empty: into that lane of the queue.
type Message struct {
	ID      string
	Payload []byte
	Delay   Millis
	Lane    string
}

// MaxMS is the canon's largest duration (A16: lease_ms 1..1e14, delay_ms 0..1e14), about 3169
// years.
const MaxMS = 100_000_000_000_000

// Millis is a lease or a delay as the scripts take it: whole milliseconds, up to MaxMS. A
// time.Duration stops near 9.2e12 ms, short of A16's range, so the ops take Millis and send it
// to the scripts exactly; Ms converts a time.Duration.
type Millis int64

// Ms is d in whole milliseconds; a positive d below one millisecond is one, so that a lease or
// a delay never rounds to nothing.
func Ms(d time.Duration) Millis {
	ms := d.Milliseconds()
	if d > 0 && ms == 0 {
		ms = 1
	}
	return Millis(ms)
}

// Enqueued is the outcome of one enqueue: Created is false for a duplicate id (nothing changed).
type Enqueued struct {
	ID      string
	Created bool
}

// EnqueueOption refines Enqueue.
type EnqueueOption func(*Message)

// WithID enqueues under a caller-chosen JOB id (idempotent: a second enqueue changes nothing).
func WithID(id string) EnqueueOption { return func(m *Message) { m.ID = id } }

// WithDelay schedules the job delay from now on the server's clock.
func WithDelay(d time.Duration) EnqueueOption { return func(m *Message) { m.Delay = Ms(d) } }

// WithLane enqueues into lane g.
func WithLane(g string) EnqueueOption { return func(m *Message) { m.Lane = g } }

// Enqueue adds one job to queue and returns its id and whether it was created.
func (b *Bus) Enqueue(ctx context.Context, queue string, payload []byte, opts ...EnqueueOption) (Enqueued, error) {
	if len(opts) == 0 { // the common call keeps its Message off the heap
		return b.Send(ctx, queue, Message{Payload: payload})
	}
	m := &Message{Payload: payload}
	for _, o := range opts {
		o(m)
	}
	return b.Send(ctx, queue, *m)
}

// Send enqueues m into queue.
func (b *Bus) Send(ctx context.Context, queue string, m Message) (Enqueued, error) {
	q, err := b.queue(queue)
	if err != nil {
		return Enqueued{}, err
	}
	var kb [7]string
	s, ks, delay, err := b.enqueueCall(ctx, q, &m, kb[:0])
	if err != nil {
		return Enqueued{}, err
	}
	// ARGV is spelled out at each call, not returned by enqueueCall, so its boxed values stay
	// on the stack: the connector only encodes them.
	if b.opt.BatchEnqueue && m.Lane == "" {
		r := &enqReq{row: ks[0], id: m.ID, payload: m.Payload, delay: delay, done: make(chan struct{})}
		created, err := b.enqueueBatched(ctx, q, r)
		if err != nil {
			return Enqueued{}, err
		}
		return Enqueued{ID: m.ID, Created: created}, nil
	}
	var v resp.Value
	if m.Lane != "" {
		v, err = b.link.EvalSha(ctx, s, ks, m.ID, m.Lane, m.Payload, delay)
	} else {
		v, err = b.link.EvalSha(ctx, s, ks, m.ID, m.Payload, delay)
	}
	if err != nil {
		return Enqueued{}, typed("enqueue", err)
	}
	return Enqueued{ID: m.ID, Created: v.Int == 1}, nil
}

// enqueueCall validates m, mints its id if needed, and returns the script, its KEYS and the
// delay in ms; ARGV is (id, payload, delay) for enqueue, (id, lane, payload, delay) for
// lane_enqueue.
func (b *Bus) enqueueCall(ctx context.Context, q *qkeys, m *Message, ks []string) (*connector.Script, []string, int64, error) {
	if m.Delay < 0 || m.Delay > MaxMS {
		return nil, nil, 0, fmt.Errorf("bus: enqueue: %w", argErr("delay %d ms: want 0..%d ms", m.Delay, int64(MaxMS)))
	}
	var lane string
	if m.Lane != "" {
		var err error
		if lane, err = b.lane(q, m.Lane); err != nil {
			return nil, nil, 0, err
		}
	}
	if m.ID == "" {
		id, err := b.Mint(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		m.ID = id
	}
	row, err := b.job(q, m.ID)
	if err != nil {
		return nil, nil, 0, err
	}
	delay := int64(m.Delay)
	if lane == "" {
		return b.scripts.enqueue, append(ks, row, q.pending, q.scheduled, q.wake), delay, nil
	}
	return b.scripts.laneEnqueue, append(ks, row, lane, q.scheduled, q.wake, q.laneof, q.lanes, q.ring), delay, nil
}

// Claim leases the oldest pending job of queue for lease, or returns nil, nil when the queue
// is empty or paused.
func (b *Bus) Claim(ctx context.Context, queue string, lease Millis) (*Job, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	return b.claim(ctx, q, int64(lease), false)
}

// LaneClaim leases the oldest job of the lane at the ring's head and rotates the ring, or
// returns nil, nil when no lane is serviceable or the queue is paused.
func (b *Bus) LaneClaim(ctx context.Context, queue string, lease Millis) (*Job, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	return b.claim(ctx, q, int64(lease), true)
}

func (b *Bus) claim(ctx context.Context, q *qkeys, ms int64, lanes bool) (*Job, error) {
	if err := checkLease(ms); err != nil {
		return nil, fmt.Errorf("bus: claim: %w", err)
	}
	var v resp.Value
	var err error
	if lanes {
		v, err = b.link.EvalSha(ctx, b.scripts.laneClaim, q.laneClaimKeys, ms)
	} else {
		v, err = b.link.EvalSha(ctx, b.scripts.claim, q.claimKeys, ms)
	}
	if err != nil {
		return nil, typed("claim", err)
	}
	return b.claimed(q, v, ms)
}

// claimed reads a claim reply: {} or {id, payload, attempts, checkpoint|nil[, lane]}.
func (b *Bus) claimed(q *qkeys, v resp.Value, leaseMS int64) (*Job, error) {
	if v.Type != resp.Array {
		return nil, fmt.Errorf("bus: claim: unexpected %s reply", v.Type)
	}
	e := v.Elems
	if len(e) == 0 {
		return nil, nil
	}
	if len(e) < 3 {
		return nil, fmt.Errorf("bus: claim: reply has %d elements", len(e))
	}
	j := &Job{bus: b, q: q, Queue: q.name, ID: string(e[0].Str), Payload: e[1].Str, Token: e[2].Int}
	j.lease.Store(leaseMS)
	if len(e) > 3 && !e[3].Null && e[3].Type == resp.BulkString {
		j.LastCheckpoint = e[3].Str
		if j.LastCheckpoint == nil {
			j.LastCheckpoint = []byte{}
		}
	}
	if len(e) > 4 {
		j.Lane = string(e[4].Str)
	}
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	return j, nil
}

// checkLease refuses a lease outside A16's 1..MaxMS ms before any byte is sent.
func checkLease(ms int64) error {
	if ms < 1 || ms > MaxMS {
		return argErr("lease %d ms: want 1..%d", ms, int64(MaxMS))
	}
	return nil
}

// msDuration is ms as a time.Duration for the bus's own timers, saturated where a Duration
// ends (about 292 years): a timer that long never fires, which is what such a lease means.
func msDuration(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// fenced runs a fenced script on (queue, id, token) with KEYS = row followed by rest(q).
func (b *Bus) fenced(ctx context.Context, op, queue, id string, token int64, s *connector.Script, rest func(q *qkeys) []string, args ...any) (resp.Value, error) {
	q, err := b.queue(queue)
	if err != nil {
		return resp.Value{}, err
	}
	return b.fencedQ(ctx, op, q, id, token, s, rest, args...)
}

func (b *Bus) fencedQ(ctx context.Context, op string, q *qkeys, id string, token int64, s *connector.Script, rest func(q *qkeys) []string, args ...any) (resp.Value, error) {
	row, err := b.job(q, id)
	if err != nil {
		return resp.Value{}, err
	}
	if token < 1 {
		return resp.Value{}, fmt.Errorf("bus: %s: %w", op, argErr("token %d: want at least 1", token))
	}
	var kb [10]string
	ks := append(append(kb[:0], row), rest(q)...)
	// A fixed array, never grown, keeps ARGV and its boxed values on the stack.
	var ab [5]any
	if len(args) > len(ab)-2 {
		return resp.Value{}, fmt.Errorf("bus: %s: %d extra arguments", op, len(args))
	}
	ab[0], ab[1] = id, token
	n := 2 + copy(ab[2:], args)
	v, err := b.link.EvalSha(ctx, s, ks, ab[:n]...)
	if err != nil {
		return v, typed(op+" "+id, err)
	}
	return v, nil
}

// settle runs a fenced script on a claimed job (the consumer's path).
func (b *Bus) settle(ctx context.Context, s *connector.Script, j *Job, rest func(q *qkeys) []string, args ...any) error {
	_, err := b.fencedQ(ctx, s.Name, j.q, j.ID, j.Token, s, rest, args...)
	if err == nil {
		j.settled.Store(true)
	}
	return err
}

func completeKeys(q *qkeys) []string   { return q.completeRest }
func retryKeys(q *qkeys) []string      { return q.retryRest }
func failKeys(q *qkeys) []string       { return q.failRest }
func extendKeys(q *qkeys) []string     { return q.extendRest }
func checkpointKeys(q *qkeys) []string { return q.checkpointRest }

// Complete retires the job: EMQSTALE unless (id, token) holds a live lease.
func (b *Bus) Complete(ctx context.Context, queue, id string, token int64) error {
	_, err := b.fenced(ctx, "complete", queue, id, token, b.scripts.complete, completeKeys)
	return err
}

// Retry returns the job to pending (delay 0) or scheduled, keeping errText as its last error;
// at maxAttempts it goes to the morgue instead and dead is true.
func (b *Bus) Retry(ctx context.Context, queue, id string, token, maxAttempts int64, delay Millis, errText string) (dead bool, err error) {
	if err := checkRetry(maxAttempts, delay); err != nil {
		return false, err
	}
	v, err := b.fenced(ctx, "retry", queue, id, token, b.scripts.retry, retryKeys, maxAttempts, int64(delay), errText)
	if err != nil {
		return false, err
	}
	switch string(v.Str) {
	case "dead":
		return true, nil
	case "retried":
		return false, nil
	}
	return false, fmt.Errorf("bus: retry: unexpected reply %q", v.Text())
}

// checkRetry refuses a retry's arguments outside A16 before any byte is sent.
func checkRetry(maxAttempts int64, delay Millis) error {
	if maxAttempts < 1 || delay < 0 || delay > MaxMS {
		return fmt.Errorf("bus: retry: %w", argErr("max attempts %d, delay %d ms: want at least 1, and 0..%d ms", maxAttempts, delay, int64(MaxMS)))
	}
	return nil
}

// Fail sends the job to the morgue with errText as its last error.
func (b *Bus) Fail(ctx context.Context, queue, id string, token int64, errText string) error {
	_, err := b.fenced(ctx, "fail", queue, id, token, b.scripts.fail, failKeys, errText)
	return err
}

// Extend moves the job's lease deadline to server TIME + lease and returns it (server ms).
func (b *Bus) Extend(ctx context.Context, queue, id string, token int64, lease Millis) (int64, error) {
	if err := checkLease(int64(lease)); err != nil {
		return 0, fmt.Errorf("bus: extend: %w", err)
	}
	v, err := b.fenced(ctx, "extend", queue, id, token, b.scripts.extend, extendKeys, int64(lease))
	if err != nil {
		return 0, err
	}
	return v.Int, nil
}

// Checkpoint stores data for the job's current attempt; a redelivery reads it back.
func (b *Bus) Checkpoint(ctx context.Context, queue, id string, token int64, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, err := b.fenced(ctx, "checkpoint", queue, id, token, b.scripts.checkpoint, checkpointKeys, data)
	return err
}

// Reap returns up to limit expired leases (server clock) to pending, or buries those at
// maxAttempts, and reports how many it settled.
func (b *Bus) Reap(ctx context.Context, queue string, maxAttempts int64, limit int) (int64, error) {
	q, err := b.queue(queue)
	if err != nil {
		return 0, err
	}
	return b.reap(ctx, q, maxAttempts, limit)
}

func (b *Bus) reap(ctx context.Context, q *qkeys, maxAttempts int64, limit int) (int64, error) {
	v, err := b.link.EvalSha(ctx, b.scripts.reap, q.reapKeys, maxAttempts, limit)
	if err != nil {
		return 0, typed("reap", err)
	}
	return v.Int, nil
}

// Promote moves up to limit due scheduled jobs to pending (or their lane).
func (b *Bus) Promote(ctx context.Context, queue string, limit int) (int64, error) {
	q, err := b.queue(queue)
	if err != nil {
		return 0, err
	}
	return b.promote(ctx, q, limit)
}

func (b *Bus) promote(ctx context.Context, q *qkeys, limit int) (int64, error) {
	v, err := b.link.EvalSha(ctx, b.scripts.promote, q.promoteKeys, limit)
	if err != nil {
		return 0, typed("promote", err)
	}
	return v.Int, nil
}

// DeadJob is a job in the morgue.
type DeadJob struct {
	ID       string
	Attempts int64
	Payload  []byte
	Error    string
	Died     int64 // server ms
}

// MaxLimit bounds every limit argument (reap, promote, morgue): A16's 1..10000.
const MaxLimit = 10000

// Morgue lists up to limit dead jobs, oldest death first. It only reads.
func (b *Bus) Morgue(ctx context.Context, queue string, limit int) ([]DeadJob, error) {
	q, err := b.queue(queue)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("bus: morgue: %w", argErr("limit %d: want 1..%d", limit, MaxLimit))
	}
	v, err := b.link.Do(ctx, q.dead, "ZRANGE", q.dead, 0, limit-1, "WITHSCORES")
	if err != nil {
		return nil, typed("morgue", err)
	}
	if len(v.Elems)%2 != 0 {
		return nil, fmt.Errorf("bus: morgue: odd ZRANGE reply")
	}
	out := make([]DeadJob, 0, len(v.Elems)/2)
	if len(v.Elems) == 0 {
		return out, nil
	}
	batch := new(connector.Batch)
	for i := 0; i < len(v.Elems); i += 2 {
		id := string(v.Elems[i].Str)
		died, err := strconv.ParseFloat(string(v.Elems[i+1].Str), 64)
		if err != nil {
			return nil, fmt.Errorf("bus: morgue: score of %s: %w", id, err)
		}
		row, err := b.job(q, id)
		if err != nil {
			return nil, fmt.Errorf("bus: morgue holds a foreign id: %w", err)
		}
		out = append(out, DeadJob{ID: id, Died: int64(died)})
		batch.Add("HMGET", row, "attempts", "payload").Add("HGET", q.errors, id)
	}
	vals, err := b.link.Exec(ctx, q.dead, batch, nil)
	if err != nil {
		return nil, typed("morgue", err)
	}
	for i := range out {
		row, e := vals[2*i], vals[2*i+1]
		if err := row.Err(); err != nil {
			return nil, typed("morgue", err)
		}
		if len(row.Elems) == 2 {
			out[i].Attempts, _ = row.Elems[0].Int64()
			out[i].Payload = row.Elems[1].Str
		}
		out[i].Error = string(e.Str)
	}
	return out, nil
}

// Revive returns a dead job to pending (attempts intact); false when it is not dead.
func (b *Bus) Revive(ctx context.Context, queue, id string) (bool, error) {
	return b.byID(ctx, "revive", queue, id, b.scripts.revive, func(q *qkeys) []string {
		return []string{q.dead, q.pending, q.errors, q.wake, q.laneof, q.lanes, q.ring}
	})
}

// Purge removes a dead job for good; false when it is not dead.
func (b *Bus) Purge(ctx context.Context, queue, id string) (bool, error) {
	return b.byID(ctx, "purge", queue, id, b.scripts.purge, func(q *qkeys) []string {
		return []string{q.dead, q.errors, q.checkpoint, q.laneof}
	})
}

func (b *Bus) byID(ctx context.Context, op, queue, id string, s *connector.Script, rest func(*qkeys) []string) (bool, error) {
	q, err := b.queue(queue)
	if err != nil {
		return false, err
	}
	row, err := b.job(q, id)
	if err != nil {
		return false, err
	}
	v, err := b.link.EvalSha(ctx, s, append([]string{row}, rest(q)...), id)
	if err != nil {
		return false, typed(op+" "+id, err)
	}
	return v.Int == 1, nil
}

// Pause stops claims on the whole queue (claim and lane claim answer empty); work is kept.
func (b *Bus) Pause(ctx context.Context, queue string) error {
	q, err := b.queue(queue)
	if err != nil {
		return err
	}
	if _, err := b.link.EvalSha(ctx, b.scripts.pause, q.pauseKeys); err != nil {
		return typed("pause", err)
	}
	return nil
}

// Resume lifts a queue pause and wakes a parked consumer if work is waiting.
func (b *Bus) Resume(ctx context.Context, queue string) error {
	q, err := b.queue(queue)
	if err != nil {
		return err
	}
	if _, err := b.link.EvalSha(ctx, b.scripts.resume, q.resumeKeys); err != nil {
		return typed("resume", err)
	}
	return nil
}

// LanePause takes lane g out of the ring; its backlog stays.
func (b *Bus) LanePause(ctx context.Context, queue, g string) error {
	q, err := b.queue(queue)
	if err != nil {
		return err
	}
	if _, err := b.lane(q, g); err != nil {
		return err
	}
	if _, err := b.link.EvalSha(ctx, b.scripts.lanePause, q.lanePauseKeys, g); err != nil {
		return typed("lane pause", err)
	}
	return nil
}

// LaneResume lifts lane g's pause; it rejoins the ring if serviceable.
func (b *Bus) LaneResume(ctx context.Context, queue, g string) error {
	return b.laneOp(ctx, "lane resume", queue, g, b.scripts.laneResume)
}

// LaneCeiling limits lane g to n concurrently active jobs; 0 removes the limit.
func (b *Bus) LaneCeiling(ctx context.Context, queue, g string, n int64) error {
	if n < 0 {
		return fmt.Errorf("bus: lane ceiling: %w", argErr("ceiling %d: want 0 or more", n))
	}
	return b.laneOp(ctx, "lane ceiling", queue, g, b.scripts.laneCeiling, n)
}

func (b *Bus) laneOp(ctx context.Context, op, queue, g string, s *connector.Script, extra ...any) error {
	q, err := b.queue(queue)
	if err != nil {
		return err
	}
	lk, err := b.lane(q, g)
	if err != nil {
		return err
	}
	if _, err := b.link.EvalSha(ctx, s, []string{lk, q.lanes, q.ring, q.wake}, append([]any{g}, extra...)...); err != nil {
		return typed(op, err)
	}
	return nil
}
