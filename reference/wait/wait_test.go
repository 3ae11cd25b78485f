package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/kit/reference/wait"
)

func TestSleep(t *testing.T) {
	if err := wait.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a short sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a sleep under a cancelled context: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("a sleep past the context's deadline: %v after %s", err, time.Since(start))
	}
}
