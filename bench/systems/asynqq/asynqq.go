// Package asynqq is asynq (github.com/hibiken/asynq), the Go task queue on Redis, as a bench
// system on the bench's Valkey: a Client to enqueue, a Server of W workers to consume.
package asynqq

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/echomq/kit/bench/internal/vkadmin"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/reference/connector"
)

// Name is asynq as printed.
const Name = "asynq"

// TaskCheckInterval is how long asynq's one fetch loop sleeps (half to one and a half times
// it) when every queue is empty. The default of 1 s puts the median latency at 1000 jobs/s
// near half a second; 1 ms is the lowest sensible setting (asynq warns that a low value adds
// load to Redis), so the latency row shows asynq at its most responsive. A busy queue never
// sleeps, so the drain does not depend on it.
const TaskCheckInterval = time.Millisecond

const (
	taskType  = "emq_bench"
	queueName = "default"
)

// Asynq is one asynq client and its queue's keys on the bench's Valkey.
type Asynq struct {
	addr    string
	client  *asynq.Client
	admin   *connector.Conn
	workers int
}

// New opens an asynq client on s.Valkey.
func New(ctx context.Context, s queue.Setup) (queue.Queue, error) {
	admin, err := connector.Dial(ctx, s.Valkey, connector.Options{})
	if err != nil {
		return nil, fmt.Errorf("bench: valkey admin connection: %w", err)
	}
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: s.Valkey, PoolSize: max(10, s.Producers)})
	if err := c.Ping(); err != nil {
		admin.Close()
		c.Close()
		return nil, fmt.Errorf("bench: asynq: %w", err)
	}
	return &Asynq{addr: s.Valkey, client: c, admin: admin, workers: s.Workers}, nil
}

func (q *Asynq) Info() queue.Info {
	return queue.Info{Name: Name, Engine: queue.Valkey, Version: "github.com/hibiken/asynq " + queue.ModuleVersion("github.com/hibiken/asynq"),
		Runtime: "Go " + runtime.Version(),
		Settings: [][2]string{{"Concurrency", strconv.Itoa(q.workers)}, {"TaskCheckInterval", TaskCheckInterval.String() + " (default 1s)"},
			{"Retention", "0 (a completed task leaves nothing)"}, {"MaxRetry", "0"}, {"batches", "none: asynq has no batch enqueue"}},
		WithRow: "no: two systems, not atomic",
		Offers:  []string{queue.EnqueueSingle, queue.EnqueueConc, queue.Drain, queue.DrainBacklog, queue.Latency},
		Docs:    "pkg.go.dev/github.com/hibiken/asynq#Config (Concurrency, TaskCheckInterval: how often an idle processor looks for a task)",
		Wake:    "polling: an idle processor dequeues, and on an empty queue sleeps half to one and a half TaskCheckInterval (1 ms) before it looks again"}
}

func (q *Asynq) Enqueue(ctx context.Context, p []byte) error {
	_, err := q.client.EnqueueContext(ctx, asynq.NewTask(taskType, p, asynq.MaxRetry(0), asynq.Queue(queueName)))
	return err
}

// Fill enqueues one task at a time from 64 goroutines: asynq has no batch insert.
func (q *Asynq) Fill(ctx context.Context, n int) error {
	p := queue.Payload(time.Now().UnixNano())
	return queue.Parallel(n, 64, func(int) error { return q.Enqueue(ctx, p) })
}

// server starts an asynq server of workers running h; stop shuts it down and waits.
func (q *Asynq) server(workers int, h func(p []byte) error) (func(), error) {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: q.addr}, asynq.Config{Concurrency: workers,
		Queues: map[string]int{queueName: 1}, TaskCheckInterval: TaskCheckInterval, LogLevel: asynq.FatalLevel,
		ShutdownTimeout: 10 * time.Second})
	mux := asynq.NewServeMux()
	mux.HandleFunc(taskType, func(_ context.Context, t *asynq.Task) error { return h(t.Payload()) })
	if err := srv.Start(mux); err != nil {
		return nil, fmt.Errorf("bench: asynq server: %w", err)
	}
	var once sync.Once
	return func() { once.Do(srv.Shutdown) }, nil
}

// Drain runs a server of workers on the backlog. asynq reports no completion a handler can see,
// so the end is read from the server as for the bus: every task started, the queue's pending and
// active lists empty (a task with no retention is deleted once done), polled every millisecond.
func (q *Asynq) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	var started atomic.Int64
	var bad atomic.Pointer[error]
	stop, err := q.server(workers, func(p []byte) error {
		m.Started()
		started.Add(1)
		if _, err := queue.SentAt(p); err != nil {
			bad.CompareAndSwap(nil, &err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer stop()
	pending, active := vkadmin.Cmd("LLEN", "asynq:{"+queueName+"}:pending"), vkadmin.Cmd("LLEN", "asynq:{"+queueName+"}:active")
	err = queue.PollUntil(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
		if started.Load() < m.N() {
			return false, nil
		}
		return vkadmin.AllZero(ctx, q.admin, pending, active)
	})
	if err != nil {
		return fmt.Errorf("%w: %d of %d started: %w", queue.ErrIncomplete, started.Load(), m.N(), err)
	}
	m.AckAll()
	if p := bad.Load(); p != nil {
		return *p
	}
	return nil
}

// Consume runs a server of workers calling h.
func (q *Asynq) Consume(_ context.Context, workers int, h queue.Handler) (func() error, error) {
	var bad atomic.Pointer[error]
	stop, err := q.server(workers, func(p []byte) error {
		t, err := queue.SentAt(p)
		if err != nil {
			bad.CompareAndSwap(nil, &err)
			return err
		}
		h(t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		stop()
		if p := bad.Load(); p != nil {
			return *p
		}
		return nil
	}, nil
}

// Reset deletes every key of asynq's (its queue's and its servers' bookkeeping).
func (q *Asynq) Reset(ctx context.Context) error {
	return vkadmin.UnlinkMatch(ctx, q.admin, "asynq:*")
}

func (q *Asynq) Close() error {
	q.admin.Close()
	return q.client.Close()
}
