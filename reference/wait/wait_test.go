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
	// An hour's sleep that returns at all returned at the context's end (the error says which).
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sleep past the context's deadline: %v", err)
	}
}
