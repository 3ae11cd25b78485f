package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

const busLease = 30 * time.Second

// BusQueue is the EchoMQ reference bus (package reference/bus). Each Reset moves it to a fresh
// queue name and deletes the old queue's keys, so runs never see each other's jobs.
type BusQueue struct {
	b     *bus.Bus
	admin *connector.Conn // the harness's own connection, for cleanup only
	pool  *pgxpool.Pool   // for the business row of the non-atomic pair
	rows  string
	seq   atomic.Int64
	queue atomic.Pointer[string]
}

// NewBusQueue opens the bus (the fence runs first) on addr.
func NewBusQueue(ctx context.Context, addr string, pool *pgxpool.Pool, rows string) (*BusQueue, error) {
	b, err := bus.Open(ctx, addr, bus.Options{})
	if err != nil {
		return nil, err
	}
	admin, err := connector.Dial(ctx, addr, connector.Options{})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bench: valkey admin connection: %w", err)
	}
	q := &BusQueue{b: b, admin: admin, pool: pool, rows: rows}
	q.next()
	return q, nil
}

func (q *BusQueue) next() {
	name := fmt.Sprintf("bench-%d-%d", time.Now().UnixMilli()%1_000_000, q.seq.Add(1))
	q.queue.Store(&name)
}

func (q *BusQueue) name() string   { return *q.queue.Load() }
func (q *BusQueue) Name() string   { return SysBus }
func (q *BusQueue) Engine() Engine { return Valkey }

func (q *BusQueue) Enqueue(ctx context.Context, p []byte) error {
	_, err := q.b.Enqueue(ctx, q.name(), p)
	return err
}

func (q *BusQueue) EnqueueBatch(ctx context.Context, ps [][]byte) error {
	msgs := make([]bus.Message, len(ps))
	for i, p := range ps {
		msgs[i] = bus.Message{Payload: p}
	}
	_, err := q.b.EnqueueBatch(ctx, q.name(), msgs)
	return err
}

// EnqueueWithRow is the honest pair: a durable PG insert, then an enqueue on another system.
// A crash between the two leaves a row without its job; nothing makes them atomic.
func (q *BusQueue) EnqueueWithRow(ctx context.Context, id int64, p []byte) error {
	if _, err := q.pool.Exec(ctx, `INSERT INTO `+q.rows+` (id, note) VALUES ($1, 'order')`, id); err != nil {
		return err
	}
	return q.Enqueue(ctx, p)
}

func (q *BusQueue) Fill(ctx context.Context, n int) error {
	return fillBatches(ctx, n, 500, q.EnqueueBatch)
}

// Drain runs workers claim+complete loops on the shared bus connection until the queue is empty
// and n jobs are complete.
func (q *BusQueue) Drain(ctx context.Context, n, workers int) error {
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	name := q.name()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, err := q.b.Claim(ctx, name, busLease)
				if err != nil {
					errs <- err
					return
				}
				if j == nil {
					return
				}
				if _, err := sentAt(j.Payload); err != nil {
					errs <- err
					return
				}
				if err := j.Complete(ctx); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if got := done.Load(); got != int64(n) {
		return fmt.Errorf("%w: bus completed %d of %d", errIncomplete, got, n)
	}
	return nil
}

// Consume runs the bus's own consumer (workers park on the wake key when idle).
func (q *BusQueue) Consume(ctx context.Context, workers int, h Handler) (func() error, error) {
	var bad atomic.Pointer[error]
	c, err := q.b.Consumer(q.name(), bus.ConsumerOptions{Concurrency: workers, Lease: busLease, Grace: 5 * time.Second},
		func(ctx context.Context, j *bus.Job) error {
			t, err := sentAt(j.Payload)
			if err != nil {
				bad.CompareAndSwap(nil, &err)
				return bus.Permanent(err)
			}
			h(t)
			return nil
		})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() error {
		cancel()
		err := <-done
		if p := bad.Load(); p != nil {
			return *p
		}
		return err
	}, nil
}

// Reset deletes the current queue's keys and moves to a fresh queue name.
func (q *BusQueue) Reset(ctx context.Context) error {
	old := q.name()
	q.next()
	match := "emq:{" + old + "}:*"
	cursor := "0"
	for {
		v, err := q.admin.Do(ctx, "SCAN", cursor, "MATCH", match, "COUNT", 1000)
		if err != nil {
			return fmt.Errorf("bench: scan %s: %w", match, err)
		}
		if len(v.Elems) != 2 {
			return fmt.Errorf("bench: scan %s: unexpected reply", match)
		}
		cursor = string(v.Elems[0].Str)
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			cmd := make([]any, 0, len(keys)+1)
			cmd = append(cmd, "UNLINK")
			for _, k := range keys {
				cmd = append(cmd, string(k.Str))
			}
			if _, err := q.admin.Do(ctx, cmd...); err != nil {
				return fmt.Errorf("bench: unlink: %w", err)
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

func (q *BusQueue) Close() error {
	q.admin.Close()
	return q.b.Close()
}

// evalShaCeiling is the trivial script of the Valkey ceiling.
var trivialScript = connector.NewScript("emq_bench_ceiling", "return 1")

// valkeyCeilingBatch runs one pipelined batch of size EVALSHAs and checks every reply.
func valkeyCeilingBatch(ctx context.Context, c *connector.Conn, b *connector.Batch, size int, dst []resp.Value) error {
	b.Reset()
	for range size {
		b.EvalSha(trivialScript, nil)
	}
	vals, err := c.Exec(ctx, b, dst[:0])
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v.Int != 1 {
			return fmt.Errorf("bench: ceiling script replied %v", v)
		}
	}
	return nil
}
