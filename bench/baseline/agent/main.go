// Command agent drives one build of the reference bus for the bench's baseline check
// (bench/baseline): one scenario per invocation on a given Valkey and queue, one JSON line of
// figures on stdout. The bench builds it twice — from the working tree and from the baseline
// (the last release tag, or BENCH_BASELINE) — and runs the two interleaved on the same server.
//
// It imports nothing of the kit but reference/bus, and touches the bus only through busAPI,
// which one adapter file implements per generation of the bus's exported API (adapter*.go, each
// under its own build tag; the bench picks the first that compiles against the tree it builds).
// So the same measuring code drives both builds whatever the API did in between.
//
//	agent -valkey ADDR -queue NAME -scenario drain|enqueue|latency [-n -workers -parked -producers -seconds -rate]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// busAPI is everything the agent needs of a bus.
type busAPI interface {
	// Enqueue adds one job; concurrent calls may be coalesced by the bus (BatchEnqueue on).
	Enqueue(ctx context.Context, queue string, payload []byte) error
	// EnqueueBatch adds the payloads as one batch.
	EnqueueBatch(ctx context.Context, queue string, payloads [][]byte) error
	// Consume runs the bus's own consumer of queue with workers slots, at most parked of them
	// blocked on the wake key, calling h at each handler start; stop ends it and waits.
	Consume(ctx context.Context, queue string, workers, parked int, h func(payload []byte)) (stop func() error, err error)
	Close() error
}

// Result is one invocation's figures.
type Result struct {
	Adapter  string  `json:"adapter"`
	Scenario string  `json:"scenario"`
	Jobs     int64   `json:"jobs"`
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_s"`
	// The latency scenario: enqueue → handler start, and how late the generator handed jobs on.
	P50     float64 `json:"p50_ms,omitempty"`
	P99     float64 `json:"p99_ms,omitempty"`
	LateP99 float64 `json:"late_p99_ms,omitempty"`
	Sent    int64   `json:"sent,omitempty"`
	// Behind: the generator could not offer the rate (its sending overran the round by more
	// than a tenth): the round measured a saturated bus, not its latency.
	Behind bool   `json:"behind,omitempty"`
	Err    string `json:"error,omitempty"`
}

type params struct {
	valkey, queue, scenario       string
	n, workers, parked, producers int
	seconds, rate                 float64
}

func main() {
	var p params
	flag.StringVar(&p.valkey, "valkey", "", "the Valkey server (host:port)")
	flag.StringVar(&p.queue, "queue", "", "the queue to use (fresh: the agent leaves its jobs behind)")
	flag.StringVar(&p.scenario, "scenario", "", "drain, enqueue or latency; adapter: print the adapter's name")
	flag.IntVar(&p.n, "n", 20000, "drain: the backlog")
	flag.IntVar(&p.workers, "workers", 256, "drain, latency: the consumer's worker slots")
	flag.IntVar(&p.parked, "parked", 8, "drain, latency: at most this many idle slots block on the wake key")
	flag.IntVar(&p.producers, "producers", 64, "enqueue: concurrent producers; latency: senders")
	flag.Float64Var(&p.seconds, "seconds", 1, "enqueue, latency: how long")
	flag.Float64Var(&p.rate, "rate", 1000, "latency: offered jobs/s")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	r := run(ctx, p)
	stop()
	r.Adapter, r.Scenario = adapterName, p.scenario
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil || r.Err != "" {
		os.Exit(1)
	}
}

func run(ctx context.Context, p params) Result {
	if p.scenario == "adapter" {
		return Result{}
	}
	if p.valkey == "" || p.queue == "" {
		return Result{Err: "agent: -valkey and -queue are required"}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b, err := openBus(ctx, p.valkey)
	if err != nil {
		return Result{Err: fmt.Sprintf("agent: open the bus: %v", err)}
	}
	defer b.Close()
	var r Result
	switch p.scenario {
	case "drain":
		r, err = drain(ctx, b, p)
	case "enqueue":
		r, err = enqueue(ctx, b, p)
	case "latency":
		r, err = latency(ctx, b, p)
	default:
		err = errors.New("unknown scenario (want drain, enqueue or latency)")
	}
	if err != nil {
		r.Err = fmt.Sprintf("agent: %s: %v", p.scenario, err)
	}
	return r
}
