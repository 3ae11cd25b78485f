// Package bench measures job queues side by side in one run: the Oban-shaped Postgres queue
// (package oban), River, and the EchoMQ reference bus, each against its engine's own ceiling
// measured in the same run. Every system plugs in through Queue; scenarios, statistics and the
// report writers know nothing else about them.
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Engine names the store a system runs on.
type Engine string

const (
	Postgres Engine = "postgres"
	Valkey   Engine = "valkey"
)

// System names, as printed.
const (
	SysOban  = "oban-shaped"
	SysRiver = "river"
	SysBus   = "bus"
)

// Handler is called at the start of each job's handler with the send instant the job carries
// (Unix nanoseconds). It must be cheap and safe for concurrent use.
type Handler func(sentUnixNano int64)

// Queue is one system under test. Methods are called from one scenario at a time; the enqueue
// methods may be called concurrently.
type Queue interface {
	Name() string
	Engine() Engine
	// Enqueue adds one job carrying payload (a small JSON object) in its own commit.
	Enqueue(ctx context.Context, payload []byte) error
	// EnqueueBatch adds jobs with the system's batch insert.
	EnqueueBatch(ctx context.Context, payloads [][]byte) error
	// EnqueueWithRow writes business row id and a job for it: one PG transaction for a Postgres
	// queue; a PG insert followed by an enqueue (two systems, not atomic) for the bus.
	EnqueueWithRow(ctx context.Context, id int64, payload []byte) error
	// Fill pre-loads n jobs (not measured).
	Fill(ctx context.Context, n int) error
	// Drain works off the pre-filled backlog with workers worker slots and an empty handler:
	// m.Started at each handler start, m.Ack once per job whose completion the system has
	// recorded. It returns after m's n acks, with its workers stopped.
	Drain(ctx context.Context, workers int, m *DrainMarks) error
	// Consume starts workers running h for each job until stop is called; stop returns once
	// the workers have ended.
	Consume(ctx context.Context, workers int, h Handler) (stop func() error, err error)
	// Reset empties the system's queue state between runs.
	Reset(ctx context.Context) error
	Close() error
}

// payload is the job body every system carries: {"t":<unix nanos>}.
func payload(t int64) []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, t, 10)
	return append(b, '}')
}

var errPayload = errors.New("bench: malformed payload")

// sentAt decodes payload without a JSON parser: it sits on the latency path. Postgres hands
// jsonb back re-spaced ({"t": 1}), so blanks are allowed.
func sentAt(p []byte) (int64, error) {
	const pre = `{"t":`
	if len(p) >= len(pre)+2 && string(p[:len(pre)]) == pre && p[len(p)-1] == '}' {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(p[len(pre):len(p)-1])), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", errPayload, p)
}
