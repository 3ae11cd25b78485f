// Package queue is what a bench system implements, and the little every system shares: the
// payload every job carries, the marks that time a drain, the backlog fill. It knows no system
// and no scenario runner; the bench (package bench) drives whatever implements Queue.
package queue

import (
	"context"
	"errors"
	"runtime/debug"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Engine names the store a system runs on.
type Engine string

const (
	Postgres Engine = "postgres"
	Valkey   Engine = "valkey"
	// PostgresValkey is the bus's transactional pair: an outbox row in PostgreSQL relayed to Valkey.
	PostgresValkey Engine = "postgres+valkey"
	// ValkeyPostgres is the bus whose handler records its effect in PostgreSQL.
	ValkeyPostgres Engine = "valkey+postgres"
)

// Scenario names, in report order. A system lists the ones it can run in Info.Offers.
const (
	EnqueueSingle = "enqueue-single"
	EnqueueConc   = "enqueue-concurrent"
	EnqueueBatch  = "enqueue-batch"
	EnqueueTx     = "enqueue-transactional"
	Drain         = "drain"
	DrainBacklog  = "drain-backlog"
	DrainOnce     = "drain-exactly-once"
	Latency       = "latency-e2e"
)

// Info is what the report says about a system before any figure.
type Info struct {
	Name   string `json:"name"`
	Engine Engine `json:"engine"`
	// Model marks a model of a queue written by the kit (the Oban-shaped queue), not the queue
	// itself: it is measured and printed, never taken as the best rival of a run.
	Model   bool   `json:"model,omitempty"`
	Version string `json:"version"`
	// Runtime is what the client ran on: "Go go1.26.8", "Node.js v22.23.5".
	Runtime  string      `json:"runtime"`
	Settings [][2]string `json:"settings"`
	// WithRow says how a business row and its job commit together, or that they cannot.
	WithRow string   `json:"with_row"`
	Offers  []string `json:"offers"`
	// Docs is the documentation its settings follow (a page of the system's own, or the kit's
	// file for the bus and the model); Wake is how its idle consumer learns of a new job, which
	// bounds its latency while it keeps up with the offered rate.
	Docs string `json:"docs,omitempty"`
	Wake string `json:"wake,omitempty"`
}

// Runs reports whether the system offers scenario.
func (i Info) Runs(scenario string) bool { return slices.Contains(i.Offers, scenario) }

// Handler is called at the start of each job's handler with the send instant the job carries
// (Unix nanoseconds). It must be cheap and safe for concurrent use.
type Handler func(sentUnixNano int64)

// Queue is one system under test. Methods are called from one scenario at a time.
type Queue interface {
	Info() Info
	// Fill pre-loads n jobs (not measured).
	Fill(ctx context.Context, n int) error
	// Drain works off the pre-filled backlog with workers worker slots and an empty handler:
	// m.Started at each handler start, m.Ack once per job whose completion the system has
	// recorded. It returns after m's n acks, with its workers stopped.
	Drain(ctx context.Context, workers int, m *DrainMarks) error
	// Reset empties the system's queue state between runs.
	Reset(ctx context.Context) error
	Close() error
}

// The in-process capabilities a scenario asks a Queue for; a Driven system runs the same
// scenarios in its own process instead.
type (
	// Enqueuer adds one job carrying payload in its own commit; calls may be concurrent.
	Enqueuer interface {
		Enqueue(ctx context.Context, payload []byte) error
	}
	// BatchEnqueuer adds jobs with the system's batch insert.
	BatchEnqueuer interface {
		EnqueueBatch(ctx context.Context, payloads [][]byte) error
	}
	// RowEnqueuer writes business row id and a job for it (one PostgreSQL transaction, or an
	// outbox row in it).
	RowEnqueuer interface {
		EnqueueWithRow(ctx context.Context, id int64, payload []byte) error
	}
	// Consumer starts workers running h for each job until stop is called; stop returns once
	// the workers have ended.
	Consumer interface {
		Consume(ctx context.Context, workers int, h Handler) (stop func() error, err error)
	}
	// Settler delivers a committed job later (an outbox relay): Settle returns once every
	// committed job has been delivered.
	Settler interface {
		Settle(ctx context.Context) error
	}
)

// Driven is a system whose client runs in another process (Node.js). Calling it once per job
// across a pipe would charge it for the hop, so it runs each scenario there under the same
// rules: the same producers, batch, workers, offered rate and clock rules (intended send
// instant, handler start).
type Driven interface {
	// RunEnqueue runs one enqueue scenario (EnqueueSingle, EnqueueConc, EnqueueBatch or
	// EnqueueTx) for d and returns jobs/s.
	RunEnqueue(ctx context.Context, scenario string, producers, batch int, d time.Duration) (float64, error)
	// RunLatency offers rate jobs/s for d to workers and returns every sample.
	RunLatency(ctx context.Context, rate float64, d time.Duration, workers, senders int) (Samples, error)
	// PID is the client process, whose CPU is the client side's.
	PID() int
}

// Samples is an open-loop run as a driven system reports it: microseconds per job.
type Samples struct {
	Offered int64 `json:"offered"`
	Sent    int64 `json:"sent"`
	// Failed enqueues the client gave up on (a Node.js client's pool timing out while its adds
	// pile up), FailedWhy the first reason: the rate was not taken.
	Failed      int64     `json:"failed"`
	FailedWhy   string    `json:"failed_why"`
	Received    int64     `json:"received"`
	SendSeconds float64   `json:"send_seconds"`
	LatencyUS   []float64 `json:"latency_us"`
	LateUS      []float64 `json:"late_us"`
	// GaveUpAt is the job at which the generator stopped offering, its senders GaveUpBehind
	// jobs behind (0: it offered every job): past GiveUp the round is saturated whatever
	// follows, and offering the rest would only add the backlog's drain to the run's time.
	GaveUpAt     int64 `json:"gave_up_at,omitempty"`
	GaveUpBehind int64 `json:"gave_up_behind,omitempty"`
}

// GiveUp is how many of a round's n jobs may wait for a sender before the generator stops: a
// quarter of the round. A pause of the machine (a GC, a busy neighbour) leaves a backlog the
// senders catch up with; a quarter of the round does not come from one.
func GiveUp(n int64) int64 { return max(8, n/4) }

// ErrIncomplete marks a run in which not every job was processed.
var ErrIncomplete = errors.New("bench: jobs not all processed")

// ErrNotInProcess answers an in-process call on a system driven in its own process.
var ErrNotInProcess = errors.New("bench: driven in its own process")

// Setup is what the bench hands every system it opens on an axis's engines.
type Setup struct {
	PGURL  string
	Pool   *pgxpool.Pool // the one pool every Go Postgres system shares (PGPool connections)
	PGPool int
	Valkey string // host:port
	Schema string // the bench's own PostgreSQL schema (business rows, outbox, effects)
	Rows   string // the business table, schema-qualified and quoted
	// Workers is W, every system's worker slots; Producers is N.
	Workers, Producers int
	// Root is the kit's checkout (for the Node drivers and their provisioning script).
	Root string
}

// Opener opens one system on an axis.
type Opener func(ctx context.Context, s Setup) (Queue, error)

// ModuleVersion is the version of a Go module linked into the bench, as the build recorded it.
func ModuleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}
