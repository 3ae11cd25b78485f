package bus_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/echomq/kit/reference/bus"
)

// Enqueue a job and consume it. It needs a Valkey 8.1 at EMQ_VALKEY_ADDR, so it has no Output
// line (go test compiles it but does not run it).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, os.Getenv("EMQ_VALKEY_ADDR"), bus.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	if _, err := b.Enqueue(ctx, "emails", []byte(`{"to":"ada@example.com"}`)); err != nil {
		log.Fatal(err)
	}
	c, err := b.Consumer("emails", bus.ConsumerOptions{Concurrency: 8, Lease: bus.Ms(30 * time.Second)},
		func(ctx context.Context, j *bus.Job) error {
			fmt.Printf("send %s (attempt %d)\n", j.Payload, j.Token)
			cancel() // one job is enough for the example; Run then shuts down gracefully
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
