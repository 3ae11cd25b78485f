package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Payload is the job body every system carries: {"t":<unix nanos>}.
func Payload(t int64) []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, t, 10)
	return append(b, '}')
}

// ErrPayload marks a job body that is not Payload's.
var ErrPayload = errors.New("bench: malformed payload")

// SentAt decodes Payload without a JSON parser: it sits on the latency path. Postgres hands
// jsonb back re-spaced ({"t": 1}), so blanks are allowed.
func SentAt(p []byte) (int64, error) {
	const pre = `{"t":`
	if len(p) >= len(pre)+2 && string(p[:len(pre)]) == pre && p[len(p)-1] == '}' {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(p[len(pre):len(p)-1])), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrPayload, p)
}

// FillBatches enqueues n payloads in batches of size through batch.
func FillBatches(ctx context.Context, n, size int, batch func(context.Context, [][]byte) error) error {
	now := time.Now().UnixNano()
	for done := 0; done < n; {
		k := min(size, n-done)
		ps := make([][]byte, k)
		for i := range ps {
			ps[i] = Payload(now)
		}
		if err := batch(ctx, ps); err != nil {
			return fmt.Errorf("bench: fill: %w", err)
		}
		done += k
	}
	return nil
}

// Parallel runs do(0..k-1) from conc goroutines and returns the first error.
func Parallel(k, conc int, do func(i int) error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < k && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

// Sleep waits d or until ctx ends; false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// PollUntil calls done every period until it reports true (nil), fails, or ctx ends.
func PollUntil(ctx context.Context, period time.Duration, done func(context.Context) (bool, error)) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
	}
}
