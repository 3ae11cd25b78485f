//go:build !emqlegacy

package main

import (
	"context"
	"sync"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// The adapter for the bus's API as of this tree. An older API gets a file of its own under
// `//go:build emqlegacy && <its tag>` (and this one stays the untagged default), so the bench
// can still build the agent against a baseline from before the change.

const adapterName = "current"

// optionHooks edit the bus's options before it opens: empty in the agent; a build may add a
// file that appends one (the baseline check's own test slows a bus this way, from outside it).
var optionHooks []func(*bus.Options)

type adapter struct{ b *bus.Bus }

func openBus(ctx context.Context, addr string) (busAPI, error) {
	opt := bus.Options{BatchEnqueue: true}
	for _, h := range optionHooks {
		h(&opt)
	}
	b, err := bus.Open(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	return adapter{b}, nil
}

func (a adapter) Enqueue(ctx context.Context, queue string, payload []byte) error {
	_, err := a.b.Enqueue(ctx, queue, payload)
	return err
}

func (a adapter) EnqueueBatch(ctx context.Context, queue string, payloads [][]byte) error {
	msgs := make([]bus.Message, len(payloads))
	for i, p := range payloads {
		msgs[i].Payload = p
	}
	_, err := a.b.EnqueueBatch(ctx, queue, msgs)
	return err
}

func (a adapter) Consume(ctx context.Context, queue string, workers, parked int, h func([]byte)) (func() error, error) {
	c, err := a.b.Consumer(queue, bus.ConsumerOptions{Concurrency: workers, Parked: parked, Lease: bus.Ms(30 * time.Second),
		Grace: 5 * time.Second}, func(_ context.Context, j *bus.Job) error {
		h(j.Payload)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	}), nil
}

func (a adapter) Close() error { return a.b.Close() }
