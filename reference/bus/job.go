package bus

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Job is a claimed job. Token is the attempt count the claim minted: the fencing token every
// settlement names. LastCheckpoint holds the checkpoint an earlier attempt stored (nil when none).
type Job struct {
	Queue          string
	ID             string
	Payload        []byte
	Token          int64
	LastCheckpoint []byte
	Lane           string
	// Worker is the index of the consumer worker that runs the job (0 outside a Consumer).
	Worker int

	bus     *Bus
	q       *qkeys
	lease   atomic.Int64 // ms; what the heartbeat extends by
	settled atomic.Bool
	stop    context.CancelCauseFunc // cancels the handler's context (consumer only)
}

// Checkpoint stores data for this attempt; a redelivery after a crash or retry reads it back.
func (j *Job) Checkpoint(ctx context.Context, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, err := j.bus.fencedQ(ctx, "checkpoint", j.q, j.ID, j.Token, j.bus.scripts.checkpoint, checkpointKeys, data)
	return err
}

// Extend moves the lease deadline to server TIME + lease and makes lease the heartbeat's.
func (j *Job) Extend(ctx context.Context, lease Millis) (deadlineMS int64, err error) {
	if err := checkLease(int64(lease)); err != nil {
		return 0, fmt.Errorf("bus: extend: %w", err)
	}
	v, err := j.bus.fencedQ(ctx, "extend", j.q, j.ID, j.Token, j.bus.scripts.extend, extendKeys, int64(lease))
	if err != nil {
		return 0, err
	}
	j.lease.Store(int64(lease))
	return v.Int, nil
}

// Complete retires the job. A handler that settles its job itself leaves nothing for the
// consumer to do.
func (j *Job) Complete(ctx context.Context) error {
	return j.bus.settle(ctx, j.bus.scripts.complete, j, completeKeys)
}

// Retry returns the job for another attempt after delay, or buries it at maxAttempts.
func (j *Job) Retry(ctx context.Context, maxAttempts int64, delay Millis, errText string) (dead bool, err error) {
	if err := checkRetry(maxAttempts, delay); err != nil {
		return false, err
	}
	v, err := j.bus.fencedQ(ctx, "retry", j.q, j.ID, j.Token, j.bus.scripts.retry, retryKeys, maxAttempts, int64(delay), errText)
	if err != nil {
		return false, err
	}
	j.settled.Store(true)
	return string(v.Str) == "dead", nil
}

// Fail sends the job to the morgue with errText.
func (j *Job) Fail(ctx context.Context, errText string) error {
	return j.bus.settle(ctx, j.bus.scripts.fail, j, failKeys, errText)
}
