// Package drivers is the seam between the contracts and a port: the Driver interface the
// fourteen contracts talk to (its arguments and results are the port protocol's shapes, package
// protocol), and Dispatch, one protocol line to a Driver call. drivers/inproc drives the
// reference bus in this process; drivers/subprocess drives any program that speaks the port
// protocol (contracts/PROTOCOL.md) on its standard input and output.
//
// Errors: a refusal the canon types (EMQSTALE, EMQKEY, …) comes back as *emqerr.Error, so
// contracts branch with errors.Is(err, emqerr.Stale). A port that crashes, hangs, answers
// garbage or out of sequence comes back as *PortError: the port misbehaved, which fails the
// contract — it is never a harness error.
package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/kit/protocol"
)

// Driver is one port under test, already started. Methods mirror the protocol's ops one to one
// and are called from one goroutine at a time.
type Driver interface {
	// Name identifies the driver in reports ("reference", "node", the port's command).
	Name() string
	Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error)
	Mint(ctx context.Context, a protocol.MintArgs) (protocol.MintResult, error)
	Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error)
	Slot(ctx context.Context, a protocol.SlotArgs) (protocol.SlotResult, error)
	Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error)
	// Claim and LaneClaim return nil, nil when nothing is claimable.
	Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error)
	LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error)
	Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error)
	Complete(ctx context.Context, a protocol.FenceArgs) error
	Retry(ctx context.Context, a protocol.RetryArgs) (protocol.RetryResult, error)
	Fail(ctx context.Context, a protocol.FailArgs) error
	Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error
	Reap(ctx context.Context, a protocol.ReapArgs) (protocol.CountResult, error)
	Promote(ctx context.Context, a protocol.PromoteArgs) (protocol.CountResult, error)
	Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error)
	Revive(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error)
	Purge(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error)
	Pause(ctx context.Context, a protocol.QueueArgs) error
	Resume(ctx context.Context, a protocol.QueueArgs) error
	LanePause(ctx context.Context, a protocol.QueueArgs) error
	LaneResume(ctx context.Context, a protocol.QueueArgs) error
	LaneCeiling(ctx context.Context, a protocol.QueueArgs) error
	Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error)
	// Reconnect drops the port's connections and opens new ones; the fence runs again.
	Reconnect(ctx context.Context) error
	// Close ends the session (and the port process, for a subprocess).
	Close(ctx context.Context) error
}

// Factory starts a fresh port session. The harness starts one per contract so that contracts
// are independent; a subprocess factory starts a new process each time.
type Factory interface {
	Name() string
	Start(ctx context.Context) (Driver, error)
}

// PortError is a port's misbehaviour at the protocol level: it crashed, hung past the request
// deadline, printed a line that is not a valid reply, answered out of sequence, or answered an
// error type the protocol does not know. Line quotes the offending output, Stderr the tail of
// the port's standard error.
type PortError struct {
	Port   string
	Op     string
	Reason string
	Line   string
	Stderr string
}

func (e *PortError) Error() string {
	s := fmt.Sprintf("port %s: %s: %s", e.Port, e.Op, e.Reason)
	if e.Line != "" {
		s += fmt.Sprintf("\n  offending line: %q", e.Line)
	}
	if e.Stderr != "" {
		s += "\n  stderr tail:\n" + e.Stderr
	}
	return s
}

// Faulter is a session that knows whether the port broke the conversation itself — crashed, hung
// past a deadline, printed a line that is not a reply, answered out of sequence (PROTOCOL.md
// Part B, B-21) — as opposed to answering an op wrongly or INTERNAL. Fault is the first such
// fault, nil when none: every later failure of the session follows from it.
type Faulter interface {
	Fault() *PortError
}

// InputEnder is a session the kit can leave without a close (PROTOCOL.md Part B, B-286): a
// subprocess port's standard input closed, the in-process reference's session ended as its
// port's end of input ends it. EndInput is the one call that may overlap another: it is made
// while a park, or a pipeline (drivers.Pipeliner) that holds one, runs on another goroutine. It
// returns once the session has ended (the process exited), or at until, ctx's end at the latest:
// nil when it ended as close ends it (exit status 0), else what it did. The session is over
// afterwards; Close only reaps it.
type InputEnder interface {
	EndInput(ctx context.Context, until time.Time) error
}

// InputCutter is an InputEnder whose input can end inside a line (B-286): EndInputInsideALine
// writes req, with the session's next seq and no newline after it, then ends the input and
// waits as EndInput does. The port may answer those last bytes or not.
type InputCutter interface {
	EndInputInsideALine(ctx context.Context, req RawRequest, until time.Time) error
}

// UnsupportedError is a port's UNSUPPORTED answer: it does not implement the op.
type UnsupportedError struct {
	Op      string
	Message string
}

func (e *UnsupportedError) Error() string { return "op " + e.Op + " unsupported: " + e.Message }

// Clocker is a Driver that offers the optional clock test op (capability protocol.CapClock):
// it scripts the port's minter clock so that the harness can check A11 (a clock stepping back,
// more than 4095 ids in one millisecond). Only ports that declare the capability are asked.
type Clocker interface {
	Clock(ctx context.Context, a protocol.ClockArgs) error
}

// WallClockFactory is a Factory that can start a session whose port process reads its wall clock
// (the Unix time it takes from the C library) from a clock the kit sets, its monotonic clock left
// alone: the situation of a machine whose clock is set back or forward under a running port. A
// runtime that reads the time past the C library (a static Go binary) is not moved by it, so a
// clause that uses it checks, on what the port answers, that the clock took.
type WallClockFactory interface {
	// StartWallClocked starts such a session, its wall clock offset from the real one;
	// ErrNoWallClock when this kit has no way to set it.
	StartWallClocked(ctx context.Context, offset time.Duration) (Driver, WallClock, error)
}

// WallClock sets the wall clock of one session's port process.
type WallClock interface {
	// Set makes the process's wall clock read the real one plus offset (whole seconds), from its
	// next reading on.
	Set(offset time.Duration) error
}

// ErrNoWallClock: the kit cannot set a port's wall clock here (the in-process reference; a
// subprocess factory without libfaketime).
var ErrNoWallClock = errors.New("the kit cannot set this port's wall clock")

// Batcher is a Driver that offers the batch ops (capability protocol.CapBatch, A17): many jobs
// per script call, each with exactly its single-job op's effect. Only ports that declare the
// capability are asked.
type Batcher interface {
	EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error)
	ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error)
	CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error)
}
